package breaker

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/srebreaker/srebreaker"
)

// Registry keeps one breaker per name, created on first use, for callers
// that guard many dependencies (one per host, per service, per database).
// The zero value is a registry whose breakers have the default options.
//
// A Registry is safe for concurrent use by multiple goroutines.
type Registry struct {
	opts []Option

	// Lookups read an immutable map without a lock. Names added since it was
	// made wait in added, behind mu, until the lookups that had to lock
	// (misses) have cost as much as copying both into a new map.
	read   atomic.Pointer[map[string]*entry]
	mu     sync.Mutex
	added  map[string]*entry // guarded by mu; names not in read
	misses int               // guarded by mu; locked lookups since read was made
}

// entry holds a registry's breaker. The maps hold a pointer to a concrete
// type, so a lookup does not convert to the Breaker interface.
type entry struct{ b Breaker }

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
// once. Looking up a name that has been looked up before takes no lock and
// does not allocate.
func (r *Registry) Get(name string) Breaker {
	if m := r.read.Load(); m != nil {
		if e, ok := (*m)[name]; ok {
			return e.b
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.lookupLocked(name)
	if e == nil {
		o := newOptions(r.opts)
		o.name = name
		e = &entry{newGoogleBreaker(o)}
		r.storeLocked(name, e)
	}
	r.misses++
	if r.misses >= len(r.added)+r.readLen() {
		r.publishLocked()
	}
	return e.b
}

// NoBreakerFor makes name unguarded: from now on Get(name) returns a breaker
// that admits every call and records nothing (see [Nop]), named name. A
// breaker already handed out for name keeps working on its own.
func (r *Registry) NoBreakerFor(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.storeLocked(name, &entry{nopBreaker{name: name}})
	r.publishLocked() // read may hold the old breaker: replace it at once
}

// Range calls f for each name the registry holds and its breaker, in no
// particular order, until f returns false: what an exporter of metrics
// iterates. f runs without the registry's lock held, so it may call Get;
// names added while Range runs may or may not be seen.
func (r *Registry) Range(f func(name string, b Breaker) bool) {
	type pair struct {
		name string
		b    Breaker
	}
	r.mu.Lock()
	pairs := make([]pair, 0, r.readLen()+len(r.added))
	if m := r.read.Load(); m != nil {
		for name, e := range *m {
			if _, shadowed := r.added[name]; !shadowed {
				pairs = append(pairs, pair{name, e.b})
			}
		}
	}
	for name, e := range r.added {
		pairs = append(pairs, pair{name, e.b})
	}
	r.mu.Unlock()
	for _, p := range pairs {
		if !f(p.name, p.b) {
			return
		}
	}
}

// lookupLocked finds name in either map. Callers hold r.mu.
func (r *Registry) lookupLocked(name string) *entry {
	if m := r.read.Load(); m != nil {
		if e, ok := (*m)[name]; ok {
			return e
		}
	}
	return r.added[name]
}

// storeLocked sets the entry for name, to be published. Callers hold r.mu.
func (r *Registry) storeLocked(name string, e *entry) {
	if r.added == nil {
		r.added = make(map[string]*entry)
	}
	r.added[name] = e
}

// publishLocked makes a new read map of read and added. Callers hold r.mu.
func (r *Registry) publishLocked() {
	if len(r.added) == 0 {
		r.misses = 0
		return
	}
	m := make(map[string]*entry, r.readLen()+len(r.added))
	if old := r.read.Load(); old != nil {
		for name, e := range *old {
			m[name] = e
		}
	}
	for name, e := range r.added {
		m[name] = e
	}
	r.read.Store(&m)
	r.added, r.misses = nil, 0
}

func (r *Registry) readLen() int {
	if m := r.read.Load(); m != nil {
		return len(*m)
	}
	return 0
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
