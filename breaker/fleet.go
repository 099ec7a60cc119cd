package breaker

import (
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/internal/fleethook"
)

// Package fleet links a breaker to its fleet through internal/fleethook:
// the breaker's plumbing stays out of this package's API.
func init() {
	fleethook.Of = func(b any) (fleethook.Link, bool) {
		g, ok := b.(*googleBreaker)
		if !ok {
			return nil, false
		}
		return fleetHandle{g}, true
	}
}

// fleetHandle is a breaker as package fleet sees it.
type fleetHandle struct{ b *googleBreaker }

func (f fleetHandle) Name() string { return f.b.name }

func (f fleetHandle) Window() time.Duration { return time.Duration(f.b.window) }

func (f fleetHandle) Grid() (time.Duration, int64) {
	return time.Duration(f.b.span), int64(f.b.settings.Buckets)
}

// History returns the breaker's buckets on the fleet's grid: the finished
// ones, and the live one as it stands.
func (f fleetHandle) History() evidence.Shared {
	b := f.b
	b.advanceIfDue()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.history.Share(b.span, b.gridOffsetLocked())
	live := b.counts.sum()
	if lv := b.levels.Load(); lv != nil {
		live = live.Plus(lv.others())
	}
	// The live bucket goes last, as it stands: the others count what it
	// holds now, and the whole of it once it is published again.
	s.Newest++
	if live != (evidence.Bucket{}) || len(s.Buckets) > 0 {
		s.Buckets = append(s.Buckets, live)
	}
	return s
}

// gridOffsetLocked is what to add to the number of a bucket of b.history
// for its number on the fleet's grid, where bucket g spans [g·span,
// (g+1)·span) from the Unix epoch: the breaker's bucket n starts at
// start + n·span, which is taken to the nearest bucket of the grid (all
// of its buckets alike, so none two to one). Callers hold b.mu.
func (b *googleBreaker) gridOffsetLocked() int64 {
	start := b.start.Load().UnixNano()
	return b.live - b.history.Next() + floorDiv(start+b.span/2, b.span)
}

func (f fleetHandle) SetOthers(others evidence.Shared) {
	b := f.b
	now := b.now()
	b.mu.Lock()
	b.fleet.now.Store(now)
	b.fleet.others.Store(&fleetOthers{history: others, until: now + b.window})
	b.judgeFleetLocked()
	b.mu.Unlock()
	b.judge()
}

func (f fleetHandle) ClearOthers() {
	b := f.b
	b.mu.Lock()
	b.fleet.others.Store(nil)
	b.fleet.judged.Store(nil)
	b.clearMode(modeFleet)
	b.mu.Unlock()
	b.judge()
}

// fleetLink is a breaker's side of its fleet: the other processes'
// buckets, set in the background, and the judgement of the fleet's
// history, made when they are set and when a bucket finishes.
type fleetLink struct {
	others atomic.Pointer[fleetOthers] // nil while the breaker decides alone
	now    atomic.Int64                // the breaker's newest reading of its clock, while others is set
	judged atomic.Pointer[fleetJudgement]
}

// fleetOthers is one SetOthers: immutable once stored.
type fleetOthers struct {
	history evidence.Shared
	// until is when the buckets go stale, on the breaker's time axis
	// (googleBreaker.now).
	until int64
}

// holdsCalls reports whether o holds a bucket with a call of the other
// processes; false for nil, the breaker deciding alone.
func (o *fleetOthers) holdsCalls() bool {
	if o == nil {
		return false
	}
	for _, x := range o.history.Buckets {
		if x != (evidence.Bucket{}) {
			return true
		}
	}
	for _, x := range o.history.Blocks {
		if x != (evidence.Bucket{}) {
			return true
		}
	}
	return false
}

// fleetJudgement is the summary of the fleet's history, the breaker's
// own finished buckets and others' added up, and the others' bucket of
// the time of the breaker's live one (published while it was theirs):
// immutable once stored.
type fleetJudgement struct {
	others *fleetOthers
	sum    evidence.Summary
	live   evidence.Bucket
}

// judgeFleetLocked judges the fleet's history afresh, from the breaker's
// history and the others' buckets, or forgets them once they are stale.
// While the breaker holds them, calls take the slow path (modeFleet), as
// they do while its own window holds a failure. Callers hold b.mu.
func (b *googleBreaker) judgeFleetLocked() {
	o := b.fleet.others.Load()
	if o == nil {
		return
	}
	if t := b.fleet.now.Load(); t > o.until || t < o.until-b.window {
		b.fleet.others.CompareAndSwap(o, nil) // stale: the breaker decides alone
		b.fleet.judged.Store(nil)
		b.clearMode(modeFleet)
		return
	}
	offset := b.gridOffsetLocked()
	j := &fleetJudgement{others: o, sum: b.history.Merged(&o.history, offset)}
	if n := b.history.Next() + offset; n <= o.history.Newest && n > o.history.Newest-int64(len(o.history.Buckets)) {
		j.live = o.history.Buckets[len(o.history.Buckets)-1-int(o.history.Newest-n)]
	}
	b.fleet.judged.Store(j)
	b.setMode(modeFleet)
}

// withFleet returns the higher of two ratios: num/den, the formula's over
// the breaker's own history (sum and the live bucket), and the fleet's
// ([evidence.Settings.FleetRatio]) over the fleet's history with the
// fleet's live bucket, the breaker's and the others' of its time. Stale
// buckets are ignored, and so are buckets set before the clock stepped
// back, as of the breaker's newest reading of its clock. settings are
// the ones the breaker judges by (judging).
func (b *googleBreaker) withFleet(settings *evidence.Settings, sum *evidence.Summary, live evidence.Bucket, num, den float64) (float64, float64) {
	o := b.fleet.others.Load()
	if o == nil {
		return num, den
	}
	if t := b.fleet.now.Load(); t > o.until || t < o.until-b.window {
		return num, den
	}
	j := b.fleet.judged.Load()
	if j == nil || j.others != o {
		return num, den // being judged: SetOthers judges again once it has
	}
	fnum, fden := settings.FleetRatio(&j.sum, live.Plus(j.live), sum, live)
	if fnum*den > num*fden { // fnum/fden > num/den, both denominators positive
		return fnum, fden
	}
	return num, den
}
