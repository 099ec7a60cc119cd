package breaker

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Registry keeps one breaker per name, created on first use, for callers
// that guard many dependencies (one per host, per service, per database).
// The zero value is a registry whose breakers have the default options.
//
// The breakers it holds are of two kinds. A name given to [Registry.Get],
// [Registry.Configure] or [Registry.NoBreakerFor] is the program's own:
// its breaker is kept as long as the registry, so the breaker a caller
// holds is the one exporters and the status page show. The names the
// integrations look up for each call (httpbreaker's host, grpcbreaker's
// method, goredisbreaker's node) come from outside, and their breakers are
// bounded: at most [DefaultLimit] unless [Registry.SetLimit] says
// otherwise, past which the registry forgets those that matter least. A
// Get of such a name makes it the program's own. Names from outside can
// thus never push out a breaker the program named.
//
// A registry keeps at most [MaxNameLen] bytes of a name: a longer one is
// cut, and made unique by a hash of the whole.
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

	named  map[string][]Option // guarded by mu; options of Configure, by name
	limit  atomic.Int64        // most keyed breakers kept: 0 for DefaultLimit, -1 for none
	keyedN int                 // guarded by mu; breakers held for names from outside

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
	// own is set for a name of the program's (Get, Configure,
	// NoBreakerFor), never forgotten; clear for a name an integration
	// looked up (keyed). Written under the registry's mu.
	own atomic.Bool
}

// NewRegistry returns a registry whose breakers are made with opts, or an
// error wrapping [ErrInvalidOption] that names the first invalid option
// and its value. WithName is refused: each breaker is named by the name
// it is looked up by.
func NewRegistry(opts ...Option) (*Registry, error) {
	o := newOptions(opts)
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.name != "" {
		return nil, fmt.Errorf("%w: NewRegistry(WithName(%q)): a registry names each breaker by its name",
			ErrInvalidOption, boundReason(o.name))
	}
	return &Registry{opts: slices.Clone(opts)}, nil
}

// MustNewRegistry is like [NewRegistry] but panics, with the message
// NewRegistry would return, when an option is invalid. It is meant for
// options written in code.
func MustNewRegistry(opts ...Option) *Registry {
	r, err := NewRegistry(opts...)
	if err != nil {
		panic(err.Error())
	}
	return r
}

// Get returns the breaker for name, creating it on first use, and makes
// name the program's own: its breaker is kept as long as the registry
// (see [Registry]). Every call with the same name returns the same
// breaker, even from many goroutines at once. Looking up a name that has
// been looked up before takes no lock and does not allocate.
func (r *Registry) Get(name string) Breaker {
	name = boundName(name)
	if m := r.read.Load(); m != nil {
		if e, ok := (*m)[name]; ok && e.own.Load() {
			if g := r.gen.Load(); e.used.Load() != g {
				e.used.Store(g)
			}
			return e.b
		}
	}
	return r.getLocked(name, true)
}

// getLocked is the slow path of Get and keyed: it takes r.mu, makes the
// breaker for name if there is none, and makes it the program's own if
// own, or if name was given to Configure, whoever makes it first.
func (r *Registry) getLocked(name string, own bool) Breaker {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.lookupLocked(name)
	if e == nil {
		name = ownName(name)
		if _, configured := r.named[name]; configured {
			own = true
		}
		o := newOptions(append(slices.Clip(r.opts), r.named[name]...))
		o.name = name
		e = &entry{b: newGoogleBreaker(o)}
		e.used.Store(r.gen.Add(1))
		e.own.Store(own)
		r.storeLocked(name, e)
		if !own {
			r.keyedN++
			r.evictLocked(name, true)
		}
	} else {
		e.used.Store(r.gen.Load())
		if own && !e.own.Load() {
			e.own.Store(true)
			r.keyedN--
		}
	}
	r.misses++
	if r.misses >= len(r.added)+r.readLen() {
		r.publishLocked()
	}
	return e.b
}

// Configure sets options for name's breaker, applied after the registry's
// own, before the breaker is made: call it when the program starts, before
// the first [Registry.Get] of name or the first call an integration makes
// to it. A later Configure for name, before the breaker is made, replaces
// the options. It makes name the program's own (see [Registry]), whether
// a Get or an integration's first call makes its breaker.
//
// It returns an error wrapping [ErrInvalidOption], and changes nothing,
// when an option is invalid, when opts hold WithName (the breaker is named
// name), or when name's breaker was made already: a breaker in use keeps
// the options it was made with, so that the breaker its callers hold is
// the one every report shows.
func (r *Registry) Configure(name string, opts ...Option) error {
	o := newOptions(append(slices.Clip(r.opts), opts...))
	if err := o.validate(); err != nil {
		return err
	}
	if o.name != "" {
		return fmt.Errorf("%w: Configure(%q, WithName(%q)): the breaker is named by the name it is configured for",
			ErrInvalidOption, boundReason(name), boundReason(o.name))
	}
	name = ownName(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lookupLocked(name) != nil {
		return fmt.Errorf("%w: Configure(%q): the breaker was made already (by a Get, or an integration's first call); configure it before",
			ErrInvalidOption, boundReason(name))
	}
	if r.named == nil {
		r.named = make(map[string][]Option)
	}
	r.named[name] = slices.Clone(opts)
	return nil
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

// NoBreakerFor makes name unguarded: from now on Get(name), and an
// integration's calls for name, get a breaker that admits every call and
// records nothing (see [Nop]), named name. Like [Registry.Configure], it
// is for when the program starts: it returns an error wrapping
// [ErrInvalidOption] when name's breaker was made already, so that no
// caller holds a breaker the registry no longer shows.
func (r *Registry) NoBreakerFor(name string) error {
	name = ownName(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.lookupLocked(name); e != nil {
		if _, nop := e.b.(nopBreaker); nop {
			return nil
		}
		return fmt.Errorf("%w: NoBreakerFor(%q): the breaker was made already (by a Get, or an integration's first call); call NoBreakerFor before",
			ErrInvalidOption, boundReason(name))
	}
	e := &entry{b: nopBreaker{name: name}}
	e.own.Store(true)
	r.storeLocked(name, e)
	return nil
}

// Lookup returns the breaker the registry holds for name and true, or nil
// and false when it holds none. Unlike [Registry.Get] it makes no breaker
// and changes nothing: a name from outside stays one, as recent as it was.
// It is how a handler finds a breaker by a name that comes in a request (an
// operator's endpoint, a status page) without making one for a typo. Like
// Get, it cuts a name longer than [MaxNameLen]; a name looked up before
// takes no lock, and a name the registry does not hold takes its lock for
// a moment.
func (r *Registry) Lookup(name string) (Breaker, bool) {
	name = boundName(name)
	if m := r.read.Load(); m != nil {
		if e, ok := (*m)[name]; ok {
			return e.b, true
		}
	}
	r.mu.Lock()
	e := r.lookupLocked(name)
	r.mu.Unlock()
	if e == nil {
		return nil, false
	}
	return e.b, true
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

// defaultRegistry backs [Get].
var defaultRegistry = new(Registry)

// DefaultRegistry returns the registry behind [Get], which the
// integrations (httpbreaker, grpcbreaker, goredisbreaker) also use unless
// given one: pass it to an exporter to report every breaker they make. Its
// breakers have the default options; give a name other options with
// DefaultRegistry().Configure before its first use. Like every registry it
// keeps at most [DefaultLimit] breakers for names from outside, so hosts,
// routes and methods cost a bounded amount of memory however many there
// are; change the bound with DefaultRegistry().SetLimit.
func DefaultRegistry() *Registry { return defaultRegistry }

// Get returns the breaker for name from the default registry, creating it
// with the default options on first use, as go-zero's GetBreaker does.
func Get(name string) Breaker { return defaultRegistry.Get(name) }
