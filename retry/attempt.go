package retry

import "context"

// attemptKey is the context key of the attempt number.
type attemptKey struct{}

// WithAttempt returns a copy of ctx that carries n as the number of the
// attempt a call is (1 for the first, 2 for the first retry, …). [Policy.Do]
// and [Call] set it for each attempt; the HTTP and gRPC integrations read
// it to send the attempt number to the server (httpbreaker's
// AttemptHeader, gRPC's grpc-previous-rpc-attempts metadata). A retry loop
// of one's own may set it too. n below 1 is taken as 1.
func WithAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, max(n, 1))
}

// Attempt returns the attempt number ctx carries (see [WithAttempt]), or 0
// when it carries none: a call made outside any retry loop that says so.
func Attempt(ctx context.Context) int {
	if ctx == nil {
		return 0
	}
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}
