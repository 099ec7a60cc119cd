package breaker

import (
	"context"
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
// context.Background(). A nil b or req panics, naming which, before
// anything is asked or recorded.
//
// Call works with any [Breaker]: it asks through [Breaker.AllowCtx] and
// reports on the promise, using [srebreaker.Ignore] for the neutral outcome.
func Call[T any](ctx context.Context, b Breaker, req func(context.Context) (T, error)) (T, error) {
	if b == nil {
		misuse("Call", "breaker")
	}
	if req == nil {
		misuse("Call", "req")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	p, err := b.AllowCtx(ctx)
	if err != nil {
		return zero, err
	}
	var v T
	nilPanic, err := runAdmitted(ctx, p, func() error {
		var err error
		v, err = req(ctx)
		return err
	}, nil)
	if nilPanic {
		panic(nil) // raised again: see runAdmitted
	}
	return v, err
}
