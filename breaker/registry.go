package breaker

import (
	"context"
	"slices"
	"sync"

	"github.com/srebreaker/srebreaker"
)

// Registry keeps one breaker per name, created on first use, for callers
// that guard many dependencies (one per host, per service, per database).
// The zero value is a registry whose breakers have the default options.
//
// A Registry is safe for concurrent use by multiple goroutines.
type Registry struct {
	opts     []Option
	mu       sync.Mutex // serializes creation and replacement
	breakers sync.Map   // name → Breaker; read without mu
}

// NewRegistry returns a registry whose breakers are made with opts (a
// WithName among them is replaced by the name given to [Registry.Get]).
// The options are checked at once: NewRegistry panics, with the message
// [New] would return, when one is invalid. To check options that come from
// configuration without a panic, pass them to New first.
func NewRegistry(opts ...Option) *Registry {
	o := newOptions(opts)
	if err := o.validate(); err != nil {
		panic(err.Error())
	}
	return &Registry{opts: slices.Clone(opts)}
}

// Get returns the breaker for name, creating it on first use. Every call
// with the same name returns the same breaker, even from many goroutines at
// once. Looking up an existing name takes no lock and does not allocate.
func (r *Registry) Get(name string) Breaker {
	if b, ok := r.breakers.Load(name); ok {
		return b.(Breaker)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.breakers.Load(name); ok {
		return b.(Breaker)
	}
	o := newOptions(r.opts)
	o.name = name
	b := Breaker(newGoogleBreaker(o))
	r.breakers.Store(name, b)
	return b
}

// NoBreakerFor makes name unguarded: from now on Get(name) returns a breaker
// that admits every call and records nothing (see [Nop]), named name. A
// breaker already handed out for name keeps working on its own.
func (r *Registry) NoBreakerFor(name string) {
	r.mu.Lock()
	r.breakers.Store(name, Breaker(nopBreaker{name: name}))
	r.mu.Unlock()
}

// defaultRegistry backs the package-level functions.
var defaultRegistry = NewRegistry()

// Get returns the breaker for name from the default registry, creating it
// with the default options on first use.
func Get(name string) Breaker { return defaultRegistry.Get(name) }

// NoBreakerFor makes name unguarded in the default registry; see
// [Registry.NoBreakerFor].
func NoBreakerFor(name string) { defaultRegistry.NoBreakerFor(name) }

// Do calls [Breaker.Do] on the default registry's breaker for name.
func Do(name string, req func() error) error {
	return Get(name).Do(req)
}

// DoCtx calls [Breaker.DoCtx] on the default registry's breaker for name.
func DoCtx(ctx context.Context, name string, req func() error) error {
	return Get(name).DoCtx(ctx, req)
}

// DoWithAcceptable calls [Breaker.DoWithAcceptable] on the default
// registry's breaker for name.
func DoWithAcceptable(name string, req func() error, acceptable srebreaker.Acceptable) error {
	return Get(name).DoWithAcceptable(req, acceptable)
}

// DoWithAcceptableCtx calls [Breaker.DoWithAcceptableCtx] on the default
// registry's breaker for name.
func DoWithAcceptableCtx(ctx context.Context, name string, req func() error,
	acceptable srebreaker.Acceptable) error {
	return Get(name).DoWithAcceptableCtx(ctx, req, acceptable)
}

// DoWithFallback calls [Breaker.DoWithFallback] on the default registry's
// breaker for name.
func DoWithFallback(name string, req func() error, fallback Fallback) error {
	return Get(name).DoWithFallback(req, fallback)
}

// DoWithFallbackCtx calls [Breaker.DoWithFallbackCtx] on the default
// registry's breaker for name.
func DoWithFallbackCtx(ctx context.Context, name string, req func() error, fallback Fallback) error {
	return Get(name).DoWithFallbackCtx(ctx, req, fallback)
}

// DoWithFallbackAcceptable calls [Breaker.DoWithFallbackAcceptable] on the
// default registry's breaker for name.
func DoWithFallbackAcceptable(name string, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	return Get(name).DoWithFallbackAcceptable(req, fallback, acceptable)
}

// DoWithFallbackAcceptableCtx calls [Breaker.DoWithFallbackAcceptableCtx] on
// the default registry's breaker for name.
func DoWithFallbackAcceptableCtx(ctx context.Context, name string, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	return Get(name).DoWithFallbackAcceptableCtx(ctx, req, fallback, acceptable)
}
