package breaker

import (
	"context"
	"fmt"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/override"
)

// Nop returns a breaker that admits every call and records nothing: Do runs
// req and returns its error, panics pass through, and fallback and
// acceptable are never called. Its Stats report its name alone, with
// Unguarded set; SetOverride returns an error wrapping ErrNotOverridable. Like every breaker, its Ctx methods return
// ctx.Err() without running req when ctx is already done. Its name is "nop".
func Nop() Breaker {
	return nopBreaker{name: "nop"}
}

type nopBreaker struct{ name string }

// nopPromise ignores the outcome.
type nopPromise struct{}

func (nopPromise) Accept()       {}
func (nopPromise) Reject(string) {}
func (nopPromise) Ignore()       {}

// RejectOverloaded records nothing, as Reject does.
func (nopPromise) RejectOverloaded(string) {}

var (
	_ srebreaker.Ignorer          = nopPromise{}
	_ srebreaker.OverloadRejecter = nopPromise{}
)

func (n nopBreaker) Name() string { return n.name }

func (nopBreaker) Allow() (srebreaker.Promise, error) { return nopPromise{}, nil }

func (nopBreaker) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	return nopPromise{}, nil
}

func (nopBreaker) Do(req func() error) error {
	if req == nil {
		misuse("Do", "req")
	}
	return req()
}

func (nopBreaker) DoCtx(ctx context.Context, req func() error) error {
	return runCtx(ctx, "DoCtx", req)
}

func (nopBreaker) DoWithAcceptable(req func() error, _ srebreaker.Acceptable) error {
	if req == nil {
		misuse("DoWithAcceptable", "req")
	}
	return req()
}

func (nopBreaker) DoWithAcceptableCtx(ctx context.Context, req func() error, _ srebreaker.Acceptable) error {
	return runCtx(ctx, "DoWithAcceptableCtx", req)
}

func (nopBreaker) DoWithFallback(req func() error, _ func(err error) error) error {
	checkReq("DoWithFallback", req)
	return req()
}

func (nopBreaker) DoWithFallbackCtx(ctx context.Context, req func() error, _ func(err error) error) error {
	return runCtx(ctx, "DoWithFallbackCtx", req)
}

func (nopBreaker) DoWithFallbackAcceptable(req func() error, _ func(err error) error,
	_ srebreaker.Acceptable) error {
	checkReq("DoWithFallbackAcceptable", req)
	return req()
}

func (nopBreaker) DoWithFallbackAcceptableCtx(ctx context.Context, req func() error,
	_ func(err error) error, _ srebreaker.Acceptable) error {
	return runCtx(ctx, "DoWithFallbackAcceptableCtx", req)
}

// Stats reports the name alone, marked Unguarded: a Nop breaker counts
// nothing.
func (n nopBreaker) Stats() Stats { return Stats{Name: n.name, Unguarded: true} }

// SetOverride returns an error wrapping ErrNotOverridable: a Nop breaker
// admits every call whatever it is told.
func (n nopBreaker) SetOverride(o override.Spec) error {
	if err := validateOverride(o); err != nil {
		return err
	}
	return fmt.Errorf("%w: breaker %q admits every call and records nothing", ErrNotOverridable, n.name)
}

func (nopBreaker) ClearOverride() {}

func (nopBreaker) Override() (override.Active, bool) { return override.Active{}, false }

// runCtx runs req unless ctx is already done; method names the caller for
// a nil req.
func runCtx(ctx context.Context, method string, req func() error) error {
	if req == nil {
		misuse(method, "req")
	}
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return req()
}
