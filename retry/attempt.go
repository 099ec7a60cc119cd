package retry

import "context"

// attemptKey is the context key of an attempt.
type attemptKey struct{}

// attempt is what a context says about the attempt a call is.
type attempt struct {
	n      int
	budget *Budget // the Policy's; nil for DefaultBudget
	taken  bool    // the Policy took the retry's budget itself, or has none
}

// WithAttempt returns a copy of ctx that carries n as the number of the
// attempt a call is (1 for the first, 2 for the first retry, …). [Policy.Do]
// and [Call] set it for each attempt; the HTTP and gRPC integrations read
// it to send the attempt number to the server (httpbreaker's
// AttemptHeader, gRPC's grpc-previous-rpc-attempts metadata) and to take
// a retry's budget from their breaker ([TakeFor]). A retry loop of one's
// own may set it too. n below 1 is taken as 1.
func WithAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, &attempt{n: max(n, 1)})
}

// Attempt returns the attempt number ctx carries (see [WithAttempt]), or 0
// when it carries none: a call made outside any retry loop that says so.
func Attempt(ctx context.Context) int {
	return attemptOf(ctx).n
}

// attemptOf returns what ctx says about the attempt; the zero attempt when
// nothing.
func attemptOf(ctx context.Context) attempt {
	if ctx == nil {
		return attempt{}
	}
	if a, _ := ctx.Value(attemptKey{}).(*attempt); a != nil {
		return *a
	}
	return attempt{}
}
