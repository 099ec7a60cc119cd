package breaker

import (
	"cmp"
	"slices"

	"github.com/srebreaker/srebreaker/internal/registryhook"
)

// The names that come from outside: the breakers the integrations look up
// for each call, which count toward the registry's limit and may be
// forgotten past it.

// keyed is Get for a name that comes from outside, looked up by an
// integration for each call: its breaker counts toward the limit and may
// be forgotten past it (see SetLimit).
func (r *Registry) keyed(name string) Breaker {
	name = boundName(name)
	if m := r.read.Load(); m != nil {
		if e, ok := (*m)[name]; ok {
			if g := r.gen.Load(); e.used.Load() != g {
				e.used.Store(g)
			}
			return e.b
		}
	}
	return r.getLocked(name, false)
}

// SetLimit bounds how many breakers the registry keeps for names that come
// from outside, those the integrations look up for each call (see
// [Registry]); the default is [DefaultLimit], and a limit of 0 or less
// removes the bound. The program's own names (Get, Configure,
// NoBreakerFor) do not count and are never forgotten. When a new name from
// outside takes the registry over its limit, a tenth of those breakers (at
// least one) are forgotten: the next call for their names makes new
// breakers, which exporters then show. A lower limit applies at once.
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
	n := r.keyedN
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
		if !e.own.Load() && (!isFresh || name != fresh) {
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
	keep = min(keep, len(all))
	gone := make(map[string]bool, len(all)-keep)
	for _, a := range all[:len(all)-keep] {
		gone[a.name] = true
		delete(r.added, a.name)
	}
	r.keyedN -= len(gone)
	m := make(map[string]*entry, r.readLen())
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

func init() {
	registryhook.Keyed = func(r *Registry, name string) Breaker { return r.keyed(name) }
}
