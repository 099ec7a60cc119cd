package grpcbreaker

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/serverside"
	"github.com/srebreaker/srebreaker/retry"
)

// maxPushback is the longest wait a [PushbackTrailer] trailer is read as: a
// server's answer is bounded like any other input from outside.
const maxPushback = 5 * time.Minute

// middlewareAttemptKey is the metadata key go-grpc-middleware's retry
// interceptor (v2) numbers its retries with: "1" on the first retry.
const middlewareAttemptKey = "x-retry-attempt"

// pushbackError is the error of a call whose server sent a PushbackTrailer
// trailer: the call's error, with what the server said about retrying.
type pushbackError struct {
	err   error
	d     time.Duration
	retry bool
}

func (e *pushbackError) Error() string { return e.err.Error() }
func (e *pushbackError) Unwrap() error { return e.err }

// GRPCStatus keeps the call's status for status.FromError and status.Code.
func (e *pushbackError) GRPCStatus() *status.Status { return status.Convert(e.err) }

// RetryPushback implements [retry.Pushback].
func (e *pushbackError) RetryPushback() (time.Duration, bool) { return e.d, e.retry }

// withPushback returns err with the pushback the trailer carries, if any:
// a non-negative number of milliseconds says when to retry (at most
// maxPushback); anything else, "don't retry" (gRFC A6).
func withPushback(err error, trailer metadata.MD) error {
	if err == nil {
		return nil
	}
	vs := trailer.Get(PushbackTrailer)
	if len(vs) == 0 {
		return err
	}
	e := &pushbackError{err: err}
	if ms, ok := serverside.Digits(vs[0], int64(maxPushback/time.Millisecond)); ok {
		e.retry, e.d = true, time.Duration(ms)*time.Millisecond
	}
	return e
}

// Retriable is a predicate for go-grpc-middleware's retry interceptor (v2,
// its WithRetriable option) in front of the client interceptors: it
// retries the codes that interceptor retries by default, Unavailable and
// ResourceExhausted, but never a call the breaker dropped, one whose
// retry budget was spent, one the server answered "overloaded; don't
// retry" (a negative [PushbackTrailer] trailer), nor a context's error. The
// retry interceptor must come first in the chain, so that each attempt
// goes through the breaker:
//
//	grpc.WithChainUnaryInterceptor(
//		grpcretry.UnaryClientInterceptor(grpcretry.WithMax(3), grpcretry.WithRetriable(grpcbreaker.Retriable)),
//		interceptors.Unary(), // from NewClientInterceptors
//	)
//
// A retry layer that takes codes alone (gRPC's own retryPolicy) cannot
// tell a drop of the client's breaker from a server's Unavailable: put the
// client interceptors outside it (gRPC's retries run inside the
// interceptors, so drops are never retried there), and see
// docs/guide/retries.md.
func Retriable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted:
		return retry.Retryable(err)
	}
	return false
}

// outgoingAttempt returns the attempt number of an outgoing call: the one
// its context carries (package retry), or one more than
// go-grpc-middleware's retry count in its outgoing metadata; 0 for none.
// fromRetry says which.
func outgoingAttempt(ctx context.Context) (n int, fromRetry bool) {
	if n := retry.Attempt(ctx); n > 0 {
		return n, true
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	if vs := md[middlewareAttemptKey]; len(vs) > 0 {
		if k, ok := serverside.Digits(vs[0], serverside.MaxAttempt-1); ok {
			return int(k) + 1, false
		}
	}
	return 0, false
}

// takeRetry takes the budget of a retry from b, and returns a call's
// error when it is spent: a status Unavailable that unwraps to
// retry.ErrBudgetSpent. A first attempt takes nothing.
func takeRetry(ctx context.Context, b breaker.Breaker) error {
	n, fromRetry := outgoingAttempt(ctx)
	var err error
	switch {
	case n < 2:
		return nil
	case fromRetry:
		err = retry.TakeFor(ctx, b)
	default:
		err = retry.DefaultBudget().Take(b)
	}
	if err != nil {
		return &shedError{msg: "grpcbreaker: retry not made: " + err.Error(), err: err}
	}
	return nil
}

// trailerOption returns callOpts with one more that fills *md with the
// call's trailer, without writing into the caller's slice.
func trailerOption(callOpts []grpc.CallOption, md *metadata.MD) []grpc.CallOption {
	return append(callOpts[:len(callOpts):len(callOpts)], grpc.Trailer(md))
}
