package breaker

import (
	"time"

	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/override"
)

// Stats is a snapshot of a breaker: what its window holds, what it has
// counted since it was made, its drop probability and its last failure
// reasons. Take one with [Breaker.Stats].
type Stats struct {
	// Name is the breaker's name.
	Name string

	// Successes, Failures and Drops are the calls the window holds (the
	// last [WithWindow] of them): admitted calls that succeeded, admitted
	// calls that failed, and calls the breaker dropped. Failures include
	// the calls counted against the dependency while still out (see
	// [WithSlowCall]), and, while it hangs, the calls out now.
	Successes, Failures, Drops int64

	// TotalSuccesses, TotalFailures and TotalDrops count the same since
	// the breaker was made; they only grow.
	TotalSuccesses, TotalFailures, TotalDrops int64

	// DropProbability is the probability that a call asking now is dropped:
	// 0 while the dependency is healthy. For a breaker linked to a fleet
	// (package fleet), it is the higher of its own and the fleet's.
	DropProbability float64

	// Reasons holds the last failure reasons, newest first, at most 5.
	Reasons []Reason

	// Criticalities holds the window's calls by [criticality.Level], highest
	// level first (CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE), and
	// each level's drop probability. A breaker whose calls name no level
	// counts them all at [criticality.Default].
	Criticalities [4]criticality.Stats

	// Retries is how many retries the breaker's retry budget (package
	// retry) granted in the window; the budget allows a share of the
	// window's admitted calls, Successes + Failures.
	Retries int64

	// Override is the operator's override in force
	// ([Breaker.SetOverride]), nil when there is none. While one is, it
	// decides the calls: the figures above, DropProbability among them,
	// say what the breaker makes of the dependency, which it goes back to
	// when the override ends.
	Override *override.Active

	// Overload is what the overload limit of a server guarded under the
	// breaker's name holds, nil for a breaker no server uses.
	Overload *OverloadStats

	// Unguarded is true for a breaker that admits every call and records
	// nothing ([Nop], a name given to [Registry.NoBreakerFor]): its figures
	// are all zero, and exporters leave it out.
	Unguarded bool
}

// Reason is a failure reason and when it was reported.
type Reason struct {
	At   time.Time
	Text string
}

// Stats returns a snapshot of the breaker. Like a call, it reads the clock
// and finishes the buckets that have ended, so a breaker that is only
// polled still tells its listeners of a change of shedding.
func (b *googleBreaker) Stats() Stats {
	b.tick()
	var lives, lifetimes [criticality.Levels]evidence.Bucket
	b.mu.Lock() // no bucket finishes meanwhile: the live bucket only grows
	j := b.judged.Load()
	var live, lifetime evidence.Bucket
	if lv := b.levels.Load(); lv != nil {
		for i, x := range lv {
			lives[i] = x.counts.sum()
			lifetimes[i] = x.lifetime.Plus(lives[i])
			live = live.Plus(lives[i])
		}
	} else {
		d := criticality.Default.Index()
		lives[d] = b.counts.sum()
		live = lives[d]
		lifetimes[d] = b.lifetime.Plus(live)
	}
	lifetime = b.lifetime.Plus(live)
	b.mu.Unlock()
	window := j.sum.Window.Plus(live)
	p := b.probability(&j.sum, live)
	var active *override.Active
	if a, ok := b.activeOverride(); ok {
		active = &a
	}
	retries, _ := b.retryWindow()
	return Stats{
		Override:        active,
		Overload:        b.overload.snapshot(),
		Retries:         retries,
		Name:            b.name,
		Successes:       window.Successes,
		Failures:        window.Failures,
		Drops:           window.Drops,
		TotalSuccesses:  lifetime.Successes,
		TotalFailures:   lifetime.Failures,
		TotalDrops:      lifetime.Drops,
		DropProbability: p,
		Reasons:         b.reasons.snapshot(),
		Criticalities:   b.levelStats(j, &lives, &lifetimes, p),
	}
}
