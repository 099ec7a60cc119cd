package breaker

import (
	"context"

	"github.com/srebreaker/srebreaker"
)

// Nop returns a breaker that admits every call and records nothing: Do runs
// req and returns its error, panics pass through, and fallback and
// acceptable are never called. Like every breaker, its Ctx methods return
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

var _ srebreaker.Ignorer = nopPromise{}

func (n nopBreaker) Name() string { return n.name }

func (nopBreaker) Allow() (srebreaker.Promise, error) { return nopPromise{}, nil }

func (nopBreaker) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	return nopPromise{}, nil
}

func (nopBreaker) Do(req func() error) error { return req() }

func (nopBreaker) DoCtx(ctx context.Context, req func() error) error { return runCtx(ctx, req) }

func (nopBreaker) DoWithAcceptable(req func() error, _ srebreaker.Acceptable) error { return req() }

func (nopBreaker) DoWithAcceptableCtx(ctx context.Context, req func() error, _ srebreaker.Acceptable) error {
	return runCtx(ctx, req)
}

func (nopBreaker) DoWithFallback(req func() error, _ Fallback) error { return req() }

func (nopBreaker) DoWithFallbackCtx(ctx context.Context, req func() error, _ Fallback) error {
	return runCtx(ctx, req)
}

func (nopBreaker) DoWithFallbackAcceptable(req func() error, _ Fallback, _ srebreaker.Acceptable) error {
	return req()
}

func (nopBreaker) DoWithFallbackAcceptableCtx(ctx context.Context, req func() error, _ Fallback,
	_ srebreaker.Acceptable) error {
	return runCtx(ctx, req)
}

// runCtx runs req unless ctx is already done.
func runCtx(ctx context.Context, req func() error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return req()
}
