package retry

import (
	"context"
	"errors"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
)

var (
	// ErrBudgetSpent is what a retry returns, without being made, when the
	// breaker's retry budget has none left (see [Budget]). [Policy.Do]
	// never retries it. Match it with errors.Is.
	ErrBudgetSpent = errors.New("retry: the breaker's retry budget is spent")

	// ErrInvalidOption is wrapped by the error [New] returns for an invalid
	// option; the full text names the option and its value.
	ErrInvalidOption = errors.New("retry: invalid option")
)

// Pushback is what an error may implement to say how the server wants the
// call retried: after d (0: as the backoff says), or, when retry is false,
// not at all: "overloaded; don't retry". [Policy.Do] finds it with
// errors.As. The errors of httpbreaker (a 429 or 503 with Retry-After, or
// with its "don't retry" header) and of grpcbreaker's client interceptors
// (a grpc-retry-pushback-ms trailer, negative for "don't retry") implement
// it.
type Pushback interface {
	RetryPushback() (d time.Duration, retry bool)
}

// PushbackOf returns what err says through [Pushback], if anything: the
// delay before a retry and whether to retry at all. ok is false when no
// error in err's chain implements Pushback.
func PushbackOf(err error) (d time.Duration, retry, ok bool) {
	var p Pushback
	if !errors.As(err, &p) {
		return 0, true, false
	}
	d, retry = p.RetryPushback()
	return max(d, 0), retry, true
}

// Retryable reports whether [Policy.Do] may retry a call that failed with
// err, whatever its options say: false for nil, for a drop of the
// breaker's (an error matching [breaker.ErrServiceUnavailable]), for
// [ErrBudgetSpent], for context.Canceled (the caller gave up) and for an
// error whose [Pushback] says "don't retry"; true otherwise.
// context.DeadlineExceeded is retryable: an attempt's own timeout says the
// dependency was slow, and [Call] stops anyway once the caller's context
// is done. The predicates of httpbreaker and grpcbreaker for
// other retry libraries build on it.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, breaker.ErrServiceUnavailable) || errors.Is(err, ErrBudgetSpent) ||
		errors.Is(err, context.Canceled) {
		return false
	}
	_, retry, _ := PushbackOf(err)
	return retry
}
