package breaker

import (
	"context"
	"errors"
	"fmt"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
)

// outcome is what a finished call is recorded as.
type outcome int

const (
	success outcome = iota
	failure
	neither // the caller gave up: the dependency is not to blame
)

// exitedReason is the failure reason of a call that neither returned nor
// panicked with a value.
const exitedReason = "call exited without returning (runtime.Goexit, or panic(nil) with GODEBUG panicnil=1)"

// runAdmitted runs req, which the breaker admitted on p, and records its
// outcome on p, as acceptable and ctx classify it: the one place a call's
// outcome is recorded, for every Do method, every level and [Call]. A
// panic in req or acceptable is recorded as a failure and goes on. recover
// returns nil for runtime.Goexit, which goes on, and for a panic(nil) under
// GODEBUG panicnil=1, which it stops: both are recorded as failures, and
// nilPanic tells the caller, which only returns in the second case, to
// raise panic(nil) again.
func runAdmitted(ctx context.Context, p srebreaker.Promise, req func() error,
	acceptable srebreaker.Acceptable) (nilPanic bool, err error) {
	recorded := false
	defer func() {
		if recorded {
			return
		}
		r := recover()
		if r == nil {
			p.Reject(exitedReason)
			nilPanic = true
			return
		}
		p.Reject(fmt.Sprint("panic: ", r))
		panic(r)
	}()
	err = req()
	if err == nil && acceptable == nil { // the common case, without a call to acceptable
		recorded = true
		p.Accept()
		return false, nil
	}
	result, reason := classify(ctx, err, acceptable)
	recorded = true
	switch result {
	case success:
		p.Accept()
	case failure:
		p.Reject(reason)
	default:
		srebreaker.Ignore(p)
	}
	return false, err
}

// classify decides how a finished call is recorded, and the failure reason.
// It runs user code (acceptable, err.Error) that may panic.
func classify(ctx context.Context, err error, acceptable srebreaker.Acceptable) (outcome, string) {
	if ctx != nil && err != nil && errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
		return neither, ""
	}
	if acceptable == nil {
		acceptable = srebreaker.DefaultAcceptable
	}
	if acceptable(err) {
		return success, ""
	}
	if err == nil {
		return failure, "nil error not acceptable"
	}
	return failure, err.Error()
}

// ctxErr is ctx.Err(), or nil for a nil ctx.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

// doCtx is do for the Ctx methods: a ctx already done returns its error
// before anything is admitted or recorded.
func (b *googleBreaker) doCtx(ctx context.Context, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return b.do(ctx, criticality.From(ctx), req, fallback, acceptable)
}

// do runs req through the breaker, asking at level. The methods without a
// context pass nil and the default level.
func (b *googleBreaker) do(ctx context.Context, level criticality.Level, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	p, err := b.allowAs(level)
	if err != nil {
		if fallback != nil {
			return fallback(err)
		}
		return err
	}
	nilPanic, err := runAdmitted(ctx, p, req, acceptable)
	if nilPanic {
		panic(nil) // raised again: see runAdmitted
	}
	return err
}

// The Do methods, each the one do or doCtx with its arguments.

func (b *googleBreaker) Do(req func() error) error {
	return b.do(context.Background(), criticality.Default, req, nil, nil)
}

func (b *googleBreaker) DoCtx(ctx context.Context, req func() error) error {
	return b.doCtx(ctx, req, nil, nil)
}

func (b *googleBreaker) DoWithAcceptable(req func() error, acceptable srebreaker.Acceptable) error {
	return b.do(context.Background(), criticality.Default, req, nil, acceptable)
}

func (b *googleBreaker) DoWithAcceptableCtx(ctx context.Context, req func() error,
	acceptable srebreaker.Acceptable) error {
	return b.doCtx(ctx, req, nil, acceptable)
}

func (b *googleBreaker) DoWithFallback(req func() error, fallback Fallback) error {
	return b.do(context.Background(), criticality.Default, req, fallback, nil)
}

func (b *googleBreaker) DoWithFallbackCtx(ctx context.Context, req func() error, fallback Fallback) error {
	return b.doCtx(ctx, req, fallback, nil)
}

func (b *googleBreaker) DoWithFallbackAcceptable(req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	return b.do(context.Background(), criticality.Default, req, fallback, acceptable)
}

func (b *googleBreaker) DoWithFallbackAcceptableCtx(ctx context.Context, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	return b.doCtx(ctx, req, fallback, acceptable)
}
