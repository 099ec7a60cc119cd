package breaker

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// ErrInvalidCounts is wrapped by the error [Fleet.SetOthers] returns for
// counts that no fleet can hold; the full text names the field and value.
var ErrInvalidCounts = errors.New("breaker: invalid fleet counts")

// Counts are what a breaker's windows hold, as the drop decision reads
// them: the admitted calls by outcome, the calls dropped, the newest run
// of finished buckets that agree (see [WithTrustRecent]) and the newest
// calls reaching back past the window (see [WithEvidence]). A breaker
// publishes its own through [Fleet.Counts]; [Fleet.SetOthers] takes the
// sum of the other processes' back, each field added up.
type Counts struct {
	// Successes and Failures are the admitted calls in the window, by
	// outcome; Drops the calls dropped in it.
	Successes, Failures, Drops int64
	// RecentSuccesses and RecentFailures are the calls of the newest run
	// of finished buckets that hold only successes (or only failures),
	// with the current bucket while it agrees; both 0 when there is no
	// such run.
	RecentSuccesses, RecentFailures int64
	// ReachSuccesses, ReachFailures and ReachDrops are the newest calls
	// the breaker judges on: reaching back past the window until they
	// hold [WithEvidence]'s calls when the window holds fewer, the
	// window's own otherwise.
	ReachSuccesses, ReachFailures, ReachDrops int64
	// Down is 1 while the breaker's newest run of failing buckets spans a
	// window or more, and Recovering 1 while its newest run of succeeding
	// buckets follows such a run; 0 otherwise. Added up over a fleet,
	// they count its processes in either state.
	Down, Recovering int64
}

// Add returns the field-by-field sum of c and o.
func (c Counts) Add(o Counts) Counts {
	return Counts{
		Successes:       c.Successes + o.Successes,
		Failures:        c.Failures + o.Failures,
		Drops:           c.Drops + o.Drops,
		RecentSuccesses: c.RecentSuccesses + o.RecentSuccesses,
		RecentFailures:  c.RecentFailures + o.RecentFailures,
		ReachSuccesses:  c.ReachSuccesses + o.ReachSuccesses,
		ReachFailures:   c.ReachFailures + o.ReachFailures,
		ReachDrops:      c.ReachDrops + o.ReachDrops,
		Down:            c.Down + o.Down,
		Recovering:      c.Recovering + o.Recovering,
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
		{"ReachSuccesses", c.ReachSuccesses}, {"ReachFailures", c.ReachFailures}, {"ReachDrops", c.ReachDrops},
		{"Down", c.Down}, {"Recovering", c.Recovering},
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
// higher of two probabilities: the formula's over the breaker's own counts,
// and the formula's over the fleet's, its own counts and the others' added
// up, to which protection and K apply as to one window. A fleet whose
// windows hold no success at all, and at least [WithEvidence]'s calls
// (failed or dropped), has been down for a window, as has a fleet one of
// whose processes has. A process whose
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
func (f *Fleet) Window() time.Duration { return time.Duration(f.b.window) }

// Counts returns what the breaker's own window holds now, to publish to
// the fleet.
func (f *Fleet) Counts() Counts {
	b := f.b
	b.tick()
	j := b.judged.Load()
	live := b.counts.sum()
	if lv := b.levels.Load(); lv != nil {
		live = live.Plus(lv.others())
	}
	return Counts(b.settings.Counts(&j.sum, live))
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
	now := f.b.now()
	f.b.fleet.now.Store(now)
	f.b.fleet.others.Store(&fleetOthers{counts: others, until: now + f.b.window})
	f.b.setMode(modeFleet)
	f.b.judge()
	return nil
}

// ClearOthers forgets the counts of the other processes: the breaker
// decides on its own counts alone until the next [Fleet.SetOthers].
func (f *Fleet) ClearOthers() {
	f.b.fleet.others.Store(nil)
	f.b.clearMode(modeFleet)
	f.b.judge()
}

// fleetLink is a breaker's side of its fleet: the other processes' counts,
// set in the background and read when the breaker judges.
type fleetLink struct {
	others atomic.Pointer[fleetOthers] // nil while the breaker decides alone
	now    atomic.Int64                // the breaker's newest reading of its clock, while others is set
}

// fleetOthers is one SetOthers: immutable once stored.
type fleetOthers struct {
	counts Counts
	// until is when the counts go stale, on the breaker's time axis
	// (googleBreaker.now).
	until int64
}

// withFleet returns the higher of two ratios: num/den, the formula's over
// the breaker's own window (sum and the live bucket), and the formula's
// over the fleet's counts, the others' and the breaker's own added up.
// Stale counts are ignored, and so are counts set before the clock stepped
// back, as of the breaker's newest reading of its clock.
func (b *googleBreaker) withFleet(sum *evidence.Summary, live evidence.Bucket, num, den float64) (float64, float64) {
	o := b.fleet.others.Load()
	if o == nil {
		return num, den
	}
	if t := b.fleet.now.Load(); t > o.until || t < o.until-b.window {
		return num, den
	}
	own := b.settings.Counts(sum, live)
	if own.Failures == 0 && o.counts.Failures == 0 || o.counts == (Counts{}) {
		// The fleet's ratio is 0, as Ratio says, or the others have
		// seen nothing: the breaker decides alone.
		return num, den
	}
	fnum, fden := b.settings.FleetRatio(evidence.Counts(o.counts.Add(Counts(own))))
	if fnum*den > num*fden { // fnum/fden > num/den, both denominators positive
		return fnum, fden
	}
	return num, den
}
