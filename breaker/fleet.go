package breaker

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrInvalidCounts is wrapped by the error [Fleet.SetOthers] returns for
// counts that no fleet can hold; the full text names the field and value.
var ErrInvalidCounts = errors.New("breaker: invalid fleet counts")

// Counts are what a breaker's window holds, as the drop decision reads it:
// the admitted calls by outcome, the calls dropped, and the newest run of
// finished buckets that agree (see [WithTrustRecent]). A breaker publishes
// its own through [Fleet.Counts]; [Fleet.SetOthers] takes the sum of the
// other processes' back.
type Counts struct {
	// Successes and Failures are the admitted calls in the window, by
	// outcome; Drops the calls dropped in it.
	Successes, Failures, Drops int64
	// RecentSuccesses and RecentFailures are the calls of the newest run
	// of finished buckets that hold only successes (or only failures),
	// with the current bucket while it agrees; both 0 when there is no
	// such run.
	RecentSuccesses, RecentFailures int64
}

// Add returns the field-by-field sum of c and o.
func (c Counts) Add(o Counts) Counts {
	return Counts{
		Successes:       c.Successes + o.Successes,
		Failures:        c.Failures + o.Failures,
		Drops:           c.Drops + o.Drops,
		RecentSuccesses: c.RecentSuccesses + o.RecentSuccesses,
		RecentFailures:  c.RecentFailures + o.RecentFailures,
	}
}

// maxFleetCount bounds each field of the counts [Fleet.SetOthers] accepts:
// far beyond what a fleet's window holds (a million processes at a million
// calls a second for a minute stays under it), and far enough below the
// largest int64 that adding a process's own counts cannot overflow.
const maxFleetCount = 1 << 50

// check returns an error naming the first field out of [0, maxFleetCount].
func (c Counts) check() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Successes", c.Successes}, {"Failures", c.Failures}, {"Drops", c.Drops},
		{"RecentSuccesses", c.RecentSuccesses}, {"RecentFailures", c.RecentFailures},
	} {
		if f.v < 0 || f.v > maxFleetCount {
			return fmt.Errorf("%w: %s %d: must be between 0 and %d", ErrInvalidCounts, f.name, f.v, int64(maxFleetCount))
		}
	}
	return nil
}

// Fleet links a breaker to the breakers of the same dependency in other
// processes: something outside the breaker (the redisbreaker module, a
// simulation) publishes [Fleet.Counts] and feeds the sum of the other
// processes' counts back through [Fleet.SetOthers], in the background. Get
// a breaker's with [FleetOf].
//
// While the breaker holds the others' counts, each call is dropped with the
// higher of two probabilities: the formula's over the breaker's own window,
// and the formula's over the fleet's, its own counts and the others' added
// up, to which protection and K apply as to one window. A process whose
// calls fail while the rest of the fleet's succeed still sheds on its own
// evidence; a process that sees too few calls to shed on its own sheds on
// the fleet's. Without the others' counts (never set, cleared, or older
// than the window) the breaker decides on its own counts alone, exactly as
// an unlinked breaker does.
//
// The call path never waits for the fleet: it reads the counts last set,
// without a lock and without allocating.
//
// A Fleet is safe for concurrent use by multiple goroutines.
type Fleet struct{ b *googleBreaker }

// FleetMember is implemented by breakers that can share their counts with
// a fleet: those made by [New], [MustNew] and registries. A wrapper around
// a Breaker can implement it to pass its breaker's link on.
type FleetMember interface {
	// Fleet returns the breaker's link to its fleet.
	Fleet() *Fleet
}

// FleetOf returns b's link to its fleet, if b has one (see [FleetMember]):
// ok is false for [Nop] breakers and implementations of Breaker that do
// not. Every call for one breaker returns a link to the same state: counts
// set through one are seen through the others.
func FleetOf(b Breaker) (f *Fleet, ok bool) {
	m, ok := b.(FleetMember)
	if !ok {
		return nil, false
	}
	f = m.Fleet()
	return f, f != nil
}

// Fleet returns the breaker's link to its fleet.
func (b *googleBreaker) Fleet() *Fleet { return &Fleet{b: b} }

// Name returns the breaker's name, which names the dependency in the fleet.
func (f *Fleet) Name() string { return f.b.name }

// Window returns the span of the breaker's window ([WithWindow]): how long
// counts set by [Fleet.SetOthers] are used, and a bound on how stale a
// publisher should let them get.
func (f *Fleet) Window() time.Duration { return f.b.fleet.window }

// Counts returns what the breaker's own window holds now, to publish to
// the fleet.
func (f *Fleet) Counts() Counts {
	return f.b.ownCounts(f.b.now())
}

// SetOthers sets the counts of the other processes of the fleet, added
// up: the breaker decides on them, with its own, until the next SetOthers,
// a [Fleet.ClearOthers], or for one window ([Fleet.Window]) from now,
// whichever comes first. A publisher that stops (its store is down, or its
// loop stuck) thus cannot leave the breaker on stale counts. It returns an
// error wrapping [ErrInvalidCounts], and changes nothing, when a count is
// negative or implausibly large (above 2^50).
func (f *Fleet) SetOthers(others Counts) error {
	if err := others.check(); err != nil {
		return err
	}
	f.b.fleet.others.Store(&fleetOthers{counts: others, until: f.b.now() + f.b.fleet.window})
	return nil
}

// ClearOthers forgets the counts of the other processes: the breaker
// decides on its own counts alone until the next [Fleet.SetOthers].
func (f *Fleet) ClearOthers() { f.b.fleet.others.Store(nil) }

// fleetLink is a breaker's side of its fleet: the other processes' counts,
// set in the background and read on the call path.
type fleetLink struct {
	window time.Duration
	others atomic.Pointer[fleetOthers] // nil while the breaker decides alone
}

// fleetOthers is one SetOthers: immutable once stored.
type fleetOthers struct {
	counts Counts
	// until is when the counts go stale, on the breaker's time axis
	// (googleBreaker.now).
	until time.Duration
}

// ownCounts reads the breaker's windows at offset t (see
// googleBreaker.now), in full (tally stops at a window without failures).
// It brings the drops window to t, as decide expects of a tally before it
// adds a drop.
func (b *googleBreaker) ownCounts(t time.Duration) Counts {
	done, cur := b.outcomes.PartsAtOffset(t)
	successes, admitted := done.Sum+cur.Sum, done.Count+cur.Count
	rs, rf := b.streaks.recent(cur.Sum, cur.Count-cur.Sum)
	drops, _ := b.drops.TotalsAtOffset(t)
	return Counts{
		Successes: successes, Failures: admitted - successes, Drops: drops,
		RecentSuccesses: rs, RecentFailures: rf,
	}
}

// withFleet returns the higher of two ratios: num/den, the formula's over
// the breaker's own window, and the formula's over the fleet's counts, o's
// and the breaker's own at offset t added up; failures are the breaker's
// own in its window. Stale counts are ignored, and so are counts set
// before the clock stepped back. It is called on the call path only while
// counts are set.
func (b *googleBreaker) withFleet(o *fleetOthers, t time.Duration, failures int64, num, den float64) (float64, float64) {
	if t > o.until || t < o.until-b.fleet.window {
		return num, den
	}
	if failures == 0 && o.counts.Failures == 0 { // the fleet's ratio is 0, as formula.ratio says
		return num, den
	}
	c := o.counts.Add(b.ownCounts(t))
	fnum, fden := b.formula.ratio(tally{
		successes: c.Successes, failures: c.Failures, drops: c.Drops,
		recentSuccesses: c.RecentSuccesses, recentFailures: c.RecentFailures,
	})
	if fnum*den > num*fden { // fnum/fden > num/den, both denominators positive
		return fnum, fden
	}
	return num, den
}
