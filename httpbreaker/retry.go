package httpbreaker

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/serverside"
	"github.com/srebreaker/srebreaker/retry"
)

// maxRetryAfter is the longest wait a Retry-After header is read as: a
// server's answer is bounded like any other input from outside.
const maxRetryAfter = 5 * time.Minute

// StatusError is the error [ResponseError] returns for a response that
// failed: a 5xx (but 501 Not Implemented) or a 429 Too Many Requests. It
// implements [retry.Pushback], so that [retry.Policy.Do] waits what the
// server asked for, or does not retry at all when it said so.
type StatusError struct {
	// StatusCode is the response's status code.
	StatusCode int
	// RetryAfter is the wait the response's Retry-After header asks for (a
	// number of seconds or an HTTP date), on a 429 or a 503; 0 without
	// one. At most 5 minutes: a longer wait is read as 5 minutes.
	RetryAfter time.Duration
	// NoRetry says the server answered "overloaded; don't retry": its
	// [RetryHeader] is [RetryNo].
	NoRetry bool
}

// Error returns "httpbreaker: " and the status, with what the server said
// about retrying.
func (e *StatusError) Error() string {
	s := "httpbreaker: response status " + strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
	switch {
	case e.NoRetry:
		s += " (the server says: don't retry)"
	case e.RetryAfter > 0:
		s += " (retry after " + e.RetryAfter.String() + ")"
	}
	return s
}

// RetryPushback implements [retry.Pushback].
func (e *StatusError) RetryPushback() (time.Duration, bool) { return e.RetryAfter, !e.NoRetry }

// ResponseError returns a [*StatusError] for a response that failed (a
// 5xx other than 501 Not Implemented, or a 429 Too Many Requests), and nil
// for any other response and for a nil one. It reads the status and the
// headers only, never the body. Inside a [retry.Call], it turns a failed
// response into an error the Policy retries, after the server's
// Retry-After, or not at all when the server said "don't retry":
//
//	resp, err := retry.Call(ctx, policy, nil, func(ctx context.Context) (*http.Response, error) {
//		resp, err := client.Do(req.WithContext(ctx))
//		if err == nil {
//			if err = httpbreaker.ResponseError(resp); err != nil {
//				resp.Body.Close()
//				return nil, err
//			}
//		}
//		return resp, err
//	})
func ResponseError(resp *http.Response) error {
	if resp == nil {
		return nil
	}
	c := resp.StatusCode
	if c != http.StatusTooManyRequests && (c < 500 || c == http.StatusNotImplemented) {
		return nil
	}
	e := &StatusError{StatusCode: c, NoRetry: resp.Header.Get(RetryHeader) == RetryNo}
	if c == http.StatusTooManyRequests || c == http.StatusServiceUnavailable {
		e.RetryAfter = retryAfter(resp)
	}
	return e
}

// maxHTTPDate bounds the length of an HTTP date, 29 bytes in the form
// servers send (Sun, 06 Nov 1994 08:49:37 GMT) and 33 at most in the
// obsolete ones: a Retry-After or a Date header that is longer is not read
// as a date, nor parsed, as time's errors copy the whole input, which a
// server sends.
const maxHTTPDate = 64

// retryAfter reads resp's Retry-After header: a number of seconds, or an
// HTTP date taken relative to the response's Date header (or the time
// now); 0 when absent or not understood, at most maxRetryAfter. It
// allocates nothing for a header of any length.
func retryAfter(resp *http.Response) time.Duration {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, ok := serverside.Digits(v, int64(maxRetryAfter/time.Second)); ok {
		return time.Duration(s) * time.Second
	}
	at, ok := parseHTTPDate(v)
	if !ok {
		return 0
	}
	now, ok := parseHTTPDate(resp.Header.Get("Date"))
	if !ok {
		now = time.Now()
	}
	return min(max(at.Sub(now), 0), maxRetryAfter)
}

// parseHTTPDate is http.ParseTime for v no longer than maxHTTPDate.
func parseHTTPDate(v string) (time.Time, bool) {
	if v == "" || len(v) > maxHTTPDate {
		return time.Time{}, false
	}
	t, err := http.ParseTime(v)
	return t, err == nil
}

// CheckRetry is a retry policy for github.com/hashicorp/go-retryablehttp
// (its CheckRetry field) around a [Transport]: it never retries a request
// the breaker dropped, one whose retry budget was spent, one the server
// answered "overloaded; don't retry" ([RetryHeader]), nor one whose
// context is done; it retries other transport errors, 429s and 5xx other
// than 501. retryablehttp's own default retries every error, drops
// included, and so turns a breaker's 3% leak to a dead dependency into
// 12% with its 4 attempts; this one does not:
//
//	client := retryablehttp.NewClient()
//	client.HTTPClient.Transport = httpbreaker.MustNewTransport(nil)
//	client.CheckRetry = httpbreaker.CheckRetry
//	client.PrepareRetry = httpbreaker.PrepareRetry
//	client.RetryMax = 2 // 3 attempts in all
//
// retryablehttp's default backoff honours Retry-After on 429 and 503.
func CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if cerr := ctx.Err(); cerr != nil {
		return false, cerr
	}
	if err != nil {
		return retry.Retryable(err), nil
	}
	return retry.Retryable(ResponseError(resp)), nil
}

// PrepareRetry is a retry hook for github.com/hashicorp/go-retryablehttp
// (its PrepareRetry field, called before each retry): it counts the
// attempt in req's [AttemptHeader], which the [Transport] sends to the
// server and reads to take the retry's budget from its breaker (see
// [retry.Budget], at its defaults). It never fails.
func PrepareRetry(req *http.Request) error {
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header[AttemptHeader] = []string{strconv.Itoa(min(AttemptOf(req)+1, serverside.MaxAttempt))}
	return nil
}

// takeRetry takes the budget of a retry from b: one whose context carries
// an attempt number above 1 ([retry.TakeFor]), or, outside package retry,
// whose AttemptHeader says it is one. It returns nil for a first attempt.
func takeRetry(req *http.Request, b breaker.Breaker) error {
	ctx := req.Context()
	if retry.Attempt(ctx) > 0 {
		return retry.TakeFor(ctx, b)
	}
	if _, ok := req.Header[AttemptHeader]; ok && AttemptOf(req) > 1 {
		return retry.DefaultBudget().Take(b)
	}
	return nil
}
