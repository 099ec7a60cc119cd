package breaker

import (
	"context"
	"errors"
	"fmt"

	"github.com/srebreaker/srebreaker"
)

// Call runs req through b and returns what req returned, so that a call
// with a result needs no variable captured by a closure:
//
//	user, err := breaker.Call(ctx, b, func(ctx context.Context) (User, error) {
//		return client.GetUser(ctx, id)
//	})
//
// It follows the rules of [Breaker.DoCtx]: only a nil error is a success; a
// dropped call returns T's zero value and an error matching
// [ErrServiceUnavailable]; when ctx is already done Call returns ctx.Err()
// and records nothing; when req fails with context.Canceled after ctx was
// canceled, the call is recorded as neither a success nor a failure; a panic
// in req is recorded as a failure and raised again. A nil ctx is treated as
// context.Background(); b must not be nil.
//
// Call works with any [Breaker]: it asks through [Breaker.AllowCtx] and
// reports on the promise, using [srebreaker.Ignore] for the neutral outcome.
func Call[T any](ctx context.Context, b Breaker, req func(context.Context) (T, error)) (T, error) {
	return CallWithFallbackAcceptable(ctx, b, req, nil, nil)
}

// CallWithFallbackAcceptable is [Call] with a fallback and an acceptable
// function, either of which may be nil.
//
// fallback runs instead of req when the breaker drops the call, with the
// drop error, which matches [ErrServiceUnavailable]; what it returns is what
// CallWithFallbackAcceptable returns. It does not run when ctx is already
// done. acceptable decides whether req's error counts as a success (nil
// means [srebreaker.DefaultAcceptable]); the error itself is returned
// untouched either way. A panic in acceptable is recorded as a failure and
// raised again.
func CallWithFallbackAcceptable[T any](ctx context.Context, b Breaker, req func(context.Context) (T, error),
	fallback func(err error) (T, error), acceptable srebreaker.Acceptable) (T, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	p, err := b.AllowCtx(ctx)
	if err != nil {
		if fallback != nil && errors.Is(err, ErrServiceUnavailable) {
			return fallback(err)
		}
		return zero, err
	}
	if acceptable == nil {
		acceptable = srebreaker.DefaultAcceptable
	}
	nilPanic, v, err := callAdmitted(ctx, p, req, acceptable)
	if nilPanic {
		panic(nil) // raised again: see callAdmitted
	}
	return v, err
}

// exitedReason is the failure reason of a call that neither returned nor
// panicked with a value.
const exitedReason = "call exited without returning (runtime.Goexit, or panic(nil) with GODEBUG panicnil=1)"

// callAdmitted runs an admitted req and reports its outcome on p. A panic
// with a value is recorded as a failure and goes on. recover returns nil
// for runtime.Goexit, which goes on, and for a panic(nil) under GODEBUG
// panicnil=1, which it stops: both are recorded as failures, and nilPanic
// tells the caller, which only returns in the second case, to raise
// panic(nil) again.
func callAdmitted[T any](ctx context.Context, p srebreaker.Promise, req func(context.Context) (T, error),
	acceptable srebreaker.Acceptable) (nilPanic bool, v T, err error) {
	recorded := false
	defer func() {
		if recorded {
			return
		}
		// req or acceptable panicked, or req called runtime.Goexit.
		r := recover()
		if r == nil {
			p.Reject(exitedReason)
			nilPanic = true
			return
		}
		p.Reject(fmt.Sprint("panic: ", r))
		panic(r)
	}()

	v, err = req(ctx)
	switch {
	case err != nil && errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled):
		recorded = true
		srebreaker.Ignore(p) // the caller gave up: the dependency is not to blame
	case acceptable(err):
		recorded = true
		p.Accept()
	default:
		reason := "nil error not acceptable"
		if err != nil {
			reason = err.Error()
		}
		recorded = true
		p.Reject(reason)
	}
	return false, v, err
}
