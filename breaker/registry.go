package breaker

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// Registry keeps one breaker per name, created on first use, for callers
// that guard many dependencies (one per host, per service, per database).
// The zero value is a registry whose breakers have the default options.
//
// A registry keeps at most [MaxNameLen] bytes of a name (a longer one is
// cut, and made unique by a hash of the whole) and at most [DefaultLimit]
// breakers unless [Registry.SetLimit] says otherwise, so that names that
// come from outside (hosts of URLs users supply, routes, gRPC methods) cost
// a bounded amount of memory: past the limit it forgets the breakers that
// matter least (see SetLimit).
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

	named map[string][]Option // guarded by mu; options of Configure, by name
	limit atomic.Int64        // most breakers kept: 0 for DefaultLimit, -1 for none

	// gen counts the breakers the registry has made: the clock recency is
	// told by. A lookup stores it in its entry's used, when it differs, so
	// that the entries used since the newest breaker was made are the most
	// recent, whatever the time; a busy name's entry is written once per
	// new breaker, not once per lookup, and its cache line stays shared.
	gen atomic.Int64
}

// entry holds a registry's breaker. The maps hold a pointer to a concrete
// type, so a lookup does not convert to the Breaker interface.
type entry struct {
	b    Breaker
	used atomic.Int64 // the registry's gen at the last lookup
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
// once. Looking up a name that has been looked up before takes no lock and
// does not allocate.
func (r *Registry) Get(name string) Breaker {
	name = boundName(name)
	if m := r.read.Load(); m != nil {
		if e, ok := (*m)[name]; ok {
			if g := r.gen.Load(); e.used.Load() != g {
				e.used.Store(g)
			}
			return e.b
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.lookupLocked(name)
	if e == nil {
		name = ownName(name)
		o := newOptions(append(slices.Clip(r.opts), r.named[name]...))
		o.name = name
		e = &entry{b: newGoogleBreaker(o)}
		e.used.Store(r.gen.Add(1))
		r.storeLocked(name, e)
		r.evictLocked(name, true)
	} else {
		e.used.Store(r.gen.Load())
	}
	r.misses++
	if r.misses >= len(r.added)+r.readLen() {
		r.publishLocked()
	}
	return e.b
}

// Configure sets options for name's breaker, applied after the registry's
// own (and after those of an earlier Configure for name, which they
// replace). A breaker already made for name is replaced at once by one with
// the new options; one already handed out keeps working on its own. It
// returns an error wrapping [ErrInvalidOption], and changes nothing, when
// the options are invalid.
func (r *Registry) Configure(name string, opts ...Option) error {
	name = ownName(name)
	o := newOptions(append(slices.Clip(r.opts), opts...))
	if err := o.validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.named == nil {
		r.named = make(map[string][]Option)
	}
	r.named[name] = slices.Clone(opts)
	if r.lookupLocked(name) != nil {
		o.name = name
		r.storeLocked(name, &entry{b: newGoogleBreaker(o)})
		r.publishLocked()
	}
	return nil
}

// SetLimit bounds how many breakers the registry keeps; the default is
// [DefaultLimit], and a limit of 0 or less removes the bound. When a new
// name takes the registry over its limit, a tenth of its breakers (at
// least one) are forgotten: a later Get of their names makes new breakers,
// and a breaker already handed out keeps working on its own. A lower limit
// applies at once.
//
// The breakers forgotten are the least recently looked up among those that
// would drop no call now; a breaker that is shedding load goes only when
// every other one has, the least recently looked up first. A new breaker
// admits every call until it has seen failures, so forgetting a healthy
// one costs nothing, while forgetting one that sheds would let through the
// calls it stops. Recency counts new names, not time: a name looked up
// since the newest breaker was made is as recent as that breaker, however
// fast names come. Finding what to forget costs a pass over the breakers,
// once per tenth of the limit of new names.
func (r *Registry) SetLimit(limit int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if limit <= 0 {
		limit = -1
	}
	r.limit.Store(int64(limit))
	r.evictLocked("", false)
}

// limitLocked returns the most breakers kept, or 0 for no bound. Callers
// hold r.mu.
func (r *Registry) limitLocked() int {
	switch l := r.limit.Load(); {
	case l == 0:
		return DefaultLimit
	case l < 0:
		return 0
	default:
		return int(l)
	}
}

// evictLocked forgets breakers while there are more than the limit, as
// SetLimit says; never fresh, a name just added, if isFresh. Callers hold
// r.mu.
func (r *Registry) evictLocked(fresh string, isFresh bool) {
	limit := r.limitLocked()
	n := r.readLen() + len(r.added)
	if limit <= 0 || n <= limit {
		return
	}
	type ranked struct {
		name     string
		shedding bool
		used     int64
	}
	all := make([]ranked, 0, n)
	r.rangeLocked(func(name string, e *entry) {
		if !isFresh || name != fresh {
			all = append(all, ranked{name, isShedding(e.b), e.used.Load()})
		}
	})
	// The first to go first: those that shed nothing, then the least
	// recently used. Names break ties, so that eviction is deterministic.
	slices.SortFunc(all, func(a, b ranked) int {
		if a.shedding != b.shedding {
			if a.shedding {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.used, b.used), cmp.Compare(a.name, b.name))
	})
	keep := limit - limit/10
	if keep >= limit {
		keep = limit - 1
	}
	if isFresh {
		keep-- // the fresh one stays too
	}
	keep = max(keep, 0)
	gone := make(map[string]bool, len(all)-keep)
	for _, a := range all[:len(all)-keep] {
		gone[a.name] = true
		delete(r.added, a.name)
	}
	m := make(map[string]*entry, keep)
	if old := r.read.Load(); old != nil {
		for name, e := range *old {
			if !gone[name] {
				m[name] = e
			}
		}
	}
	r.read.Store(&m)
	r.misses = 0
}

// rangeLocked calls f for each name and entry, the newer entry for a name
// in both maps. Callers hold r.mu.
func (r *Registry) rangeLocked(f func(name string, e *entry)) {
	if m := r.read.Load(); m != nil {
		for name, e := range *m {
			if _, shadowed := r.added[name]; !shadowed {
				f(name, e)
			}
		}
	}
	for name, e := range r.added {
		f(name, e)
	}
}

// NoBreakerFor makes name unguarded: from now on Get(name) returns a breaker
// that admits every call and records nothing (see [Nop]), named name. A
// breaker already handed out for name keeps working on its own.
func (r *Registry) NoBreakerFor(name string) {
	name = ownName(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.storeLocked(name, &entry{b: nopBreaker{name: name}})
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
	r.rangeLocked(func(name string, e *entry) { pairs = append(pairs, pair{name, e.b}) })
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

// Source is a set of named breakers, what an exporter of metrics reads:
// Range calls f for each breaker and its name until f returns false, and
// may be called from many goroutines at once, while the breakers are in
// use. *[Registry] implements it; a program that holds breakers of its own
// can range over them with a type of its own. Names must be distinct
// within a Source.
type Source interface {
	Range(f func(name string, b Breaker) bool)
}

var _ Source = (*Registry)(nil)

// defaultRegistry backs [Get] and [NoBreakerFor].
var defaultRegistry = NewRegistry()

// DefaultRegistry returns the registry behind [Get] and [NoBreakerFor],
// which the integrations (httpbreaker, grpcbreaker) also use unless given
// one: pass it to an exporter to report
// every breaker they make. Like every registry it keeps at most
// [DefaultLimit] breakers, so hosts, routes and methods that come from
// outside cost a bounded amount of memory however many there are; change
// the bound with DefaultRegistry().SetLimit.
func DefaultRegistry() *Registry { return defaultRegistry }

// Get returns the breaker for name from the default registry, creating it
// with the default options on first use.
func Get(name string) Breaker { return defaultRegistry.Get(name) }

// NoBreakerFor makes name unguarded in the default registry; see
// [Registry.NoBreakerFor].
func NoBreakerFor(name string) { defaultRegistry.NoBreakerFor(name) }
