package breaker

import (
	"context"
	"errors"
	"fmt"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
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
// outcome on p, as acceptable and ctx classify it: for [Call], which
// works with any Breaker. The breaker's own Do methods use run, which
// does the same on the concrete promise, and changes with it. A
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
func (b *googleBreaker) doCtx(ctx context.Context, req func() error, fallback func(err error) error,
	acceptable srebreaker.Acceptable) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return b.do(ctx, criticality.From(ctx), req, fallback, acceptable)
}

// do runs req through the breaker, asking at level. The methods without a
// context pass nil and the default level.
func (b *googleBreaker) do(ctx context.Context, level criticality.Level, req func() error, fallback func(err error) error,
	acceptable srebreaker.Acceptable) error {
	co, err := b.admitAs(level)
	if err != nil {
		if ctx != nil {
			b.traceDrop(ctx, level, err, fallback != nil)
		}
		if fallback != nil {
			return fallback(err)
		}
		return err
	}
	s, err := promise{co}.run(ctx, req, acceptable)
	if s == runNilPanic {
		panic(nil) // raised again: see runAdmitted
	}
	return err
}

// runState is where run is: running req, its outcome recorded, or a
// panic(nil) stopped (see runAdmitted), which the caller raises again.
type runState uint8

const (
	runRunning runState = iota
	runRecorded
	runNilPanic
)

// run is runAdmitted for a call admitted on p's cohort: it records on the
// cohort directly rather than through the srebreaker.Promise interface,
// and keeps one state for its deferred function to read and set.
func (p promise) run(ctx context.Context, req func() error,
	acceptable srebreaker.Acceptable) (s runState, err error) {
	defer func() {
		if s == runRunning {
			s = p.panicked(recover())
		}
	}()
	err = req()
	if err == nil && acceptable == nil { // the common case, without a call to acceptable
		s = runRecorded
		p.c.markSuccess()
		return s, nil
	}
	result, reason := classify(ctx, err, acceptable)
	s = runRecorded
	switch result {
	case success:
		p.c.markSuccess()
	case failure:
		p.c.markFailure(reason)
		chain.Failed(ctx, p.c.b) // see package chain
	default:
		p.Ignore()
	}
	return s, err
}

// panicked records, as a failure, a call that did not return: r is what
// recover returned in the call's deferred function. A non-nil r is raised
// again. A nil r is runtime.Goexit, which goes on, or a panic(nil) under
// GODEBUG panicnil=1, which recover stopped: panicked returns
// runNilPanic, and the caller, which only returns in the second case,
// raises panic(nil) again.
func (p promise) panicked(r any) runState {
	if r == nil {
		p.c.markFailure(exitedReason)
		return runNilPanic
	}
	p.c.markFailure(fmt.Sprint("panic: ", r))
	panic(r)
}

// The Do methods, each the one do or doCtx with its arguments but Do.

// Do is do at the default level without a context, an acceptable or a
// fallback, written out, with its deferred function of its own: the calls
// to do, admitAs and run that it saves cost a quarter of Do's time. A
// panic(nil) that recover stops (GODEBUG panicnil=1) must be raised again
// by a caller of the deferred function's frame (see runAdmitted): where
// the program started with that setting, Do takes doRun, which is one.
func (b *googleBreaker) Do(req func() error) (err error) {
	if req == nil {
		misuse("Do", "req")
	}
	if panicNilRecovers {
		return b.doRun(req)
	}
	co, err := b.admit(&b.counts, criticality.Default.Index())
	if err != nil {
		return err
	}
	recorded := false
	defer func() {
		if !recorded { // req or err.Error panicked, or the goroutine exits
			err = promise{co}.exited(recover())
		}
	}()
	if err = req(); err != nil {
		reason := err.Error() // user code, which may panic: recorded above
		recorded = true
		co.markFailure(reason)
		return err
	}
	recorded = true
	co.markSuccess()
	return nil
}

// doRun is Do through run, for a program where recover stops a panic(nil).
func (b *googleBreaker) doRun(req func() error) error {
	co, err := b.admit(&b.counts, criticality.Default.Index())
	if err != nil {
		return err
	}
	s, err := promise{co}.run(context.Background(), req, nil)
	if s == runNilPanic {
		panic(nil) // raised again: see runAdmitted
	}
	return err
}

// panicNilRecovers reports whether recover returns nil for a panic(nil),
// as it does under GODEBUG panicnil=1, when the program starts.
var panicNilRecovers = func() (recovered bool) {
	defer func() { recovered = recover() == nil }()
	panic(nil)
}()

// errExited is what Do returns for a call that stopped with a panic(nil)
// that recover stopped, in a program that set GODEBUG panicnil=1 after it
// started: Do cannot raise it again (see exited).
var errExited = errors.New("breaker: " + exitedReason)

// exited records, as a failure, a call of Do that did not return: r is
// what recover returned in Do's deferred function. A non-nil r is raised
// again. A nil r is runtime.Goexit, which goes on whatever is returned:
// panic(nil) raises a *runtime.PanicNilError unless GODEBUG panicnil=1,
// which Do reads when the program starts (panicNilRecovers). Only a
// program that sets it later gets errExited for a panic(nil).
func (p promise) exited(r any) error {
	p.panicked(r)
	return errExited
}

func (b *googleBreaker) DoCtx(ctx context.Context, req func() error) error {
	if req == nil {
		misuse("DoCtx", "req")
	}
	return b.doCtx(ctx, req, nil, nil)
}

func (b *googleBreaker) DoWithAcceptable(req func() error, acceptable srebreaker.Acceptable) error {
	if req == nil {
		misuse("DoWithAcceptable", "req")
	}
	return b.do(context.Background(), criticality.Default, req, nil, acceptable)
}

func (b *googleBreaker) DoWithAcceptableCtx(ctx context.Context, req func() error,
	acceptable srebreaker.Acceptable) error {
	if req == nil {
		misuse("DoWithAcceptableCtx", "req")
	}
	return b.doCtx(ctx, req, nil, acceptable)
}

func (b *googleBreaker) DoWithFallback(req func() error, fallback func(err error) error) error {
	checkReq("DoWithFallback", req)
	return b.do(context.Background(), criticality.Default, req, fallback, nil)
}

func (b *googleBreaker) DoWithFallbackCtx(ctx context.Context, req func() error,
	fallback func(err error) error) error {
	checkReq("DoWithFallbackCtx", req)
	return b.doCtx(ctx, req, fallback, nil)
}

func (b *googleBreaker) DoWithFallbackAcceptable(req func() error, fallback func(err error) error,
	acceptable srebreaker.Acceptable) error {
	checkReq("DoWithFallbackAcceptable", req)
	return b.do(context.Background(), criticality.Default, req, fallback, acceptable)
}

func (b *googleBreaker) DoWithFallbackAcceptableCtx(ctx context.Context, req func() error,
	fallback func(err error) error, acceptable srebreaker.Acceptable) error {
	checkReq("DoWithFallbackAcceptableCtx", req)
	return b.doCtx(ctx, req, fallback, acceptable)
}

// misuse panics for a nil argument of a method: the caller's mistake,
// raised before the breaker is asked, so that nothing is admitted or
// recorded against the dependency. The message names the method and the
// argument.
func misuse(method, arg string) {
	panic("breaker: " + method + " called with a nil " + arg)
}

// checkReq panics, through misuse, when req is nil. A nil fallback or
// acceptable is not misuse: it means none, or the default, as in go-zero.
func checkReq(method string, req func() error) {
	if req == nil {
		misuse(method, "req")
	}
}
