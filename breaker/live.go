package breaker

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/rollingwindow"
)

// stripe counts one share of the live bucket of one level: the calls it
// admitted, in cohorts of a bucket each (see cohort), their outcomes, on
// its lane of the level's window, and the calls it dropped since the
// bucket began. A level counts on
// one stripe until two goroutines are seen writing it at once, then on
// spreadStripes of them, each on a cache line of its own: a call then
// counts on the stripe its processor was handed (see spread.pick), so that
// the call path writes memory no other core is writing.
type stripe struct {
	counts *counts // the level's live bucket this stripe is part of
	spread bool    // one of spread.stripes: written with Add, not watched for contention
	// cohort counts the calls admitted in the live bucket, and links to
	// the cohorts of earlier buckets whose calls are still out; nil
	// until the stripe admits its first call.
	cohort atomic.Pointer[cohort]
	// decided counts the calls decided on a draw since the bucket began:
	// the drops in its low 32 bits, the admitted calls in its high bits.
	// It is also the state of the draws that the system's randomness
	// decides (see decide).
	decided atomic.Int64
	// salt is mixed into every draw of the stripe; a new one with every
	// bucket, as decided starts again from 0.
	salt atomic.Uint64
	// lane is the stripe's share of the level's window (counts.window):
	// the outcomes of its calls, Add(1) a success and Add(0) a failure.
	// It joins the window before the stripe admits a call.
	lane rollingwindow.Lane[int64]
}

// The halves of stripe.decided.
const (
	dropMask    = 1<<32 - 1 // the drops
	admittedOne = 1 << 32   // one call admitted on a draw
)

// stripeFields is the size of a stripe, which paddedStripe pads.
const stripeFields = 72

// dropsOf returns the drops of a stripe.decided word.
func dropsOf(decided int64) int64 { return decided & dropMask }

// spreadStripes is how many stripes a contended level counts on.
const spreadStripes = 8

// paddedStripe keeps a stripe on a pair of cache lines of its own: the
// processors fetch lines in pairs, and two stripes sharing a pair bounce
// between cores as one line does.
type paddedStripe struct {
	stripe
	_ [128 - stripeFields]byte
}

// spread is the stripes of a contended level. A sync.Pool keeps a stripe
// per processor: Get hands a processor the stripe it put back last, so
// that the calls running on one processor count on one stripe, without
// reaching into the runtime. Stripes are handed out in turn the first time
// a processor asks, and again after a garbage collection empties the pool.
//
// The stripes are an allocation of their own: measured on 2 cores, with
// the stripes in one object with the pool that hands them out, 2
// goroutines calling Allow and Accept spent 4.9 times the CPU per call of
// 1; apart, 1.8 times (a Get, a Put and an add alone: 2.5 and 1.0 times).
type spread struct {
	stripes *[spreadStripes]paddedStripe
	handed  atomic.Uint32 // how many stripes the pool has handed out
	pool    sync.Pool     // of *stripe
}

// pick returns the stripe of the calling goroutine's processor.
func (sp *spread) pick() *stripe {
	s := sp.pool.Get().(*stripe)
	sp.pool.Put(s)
	return s
}

// counts is the live bucket of one level: the stripes' drops and calls
// out, and the outcomes, counted by the level's window.
type counts struct {
	b      *googleBreaker
	own    stripe
	spread atomic.Pointer[spread]     // nil until contention was seen
	window atomic.Pointer[liveWindow] // nil until the level admits a call
}

// liveWindow is the rolling window a level records its calls' outcomes in,
// made at the level's first call: a rollingwindow.RollingWindow of one
// bucket, the live one, which each stripe adds to through its lane. The
// breaker moves it, on its own time axis, when a bucket finishes
// (counts.take), and hands what the bucket held to its history; the
// finished buckets are judged there (internal/evidence).
type liveWindow struct {
	live *rollingwindow.RollingWindow[int64]
	// done is what the buckets the last move finished held, as the
	// window hands them over (OnBucketDone). Guarded by the breaker's mu,
	// under which alone the window moves.
	done rollingwindow.Bucket[int64]
}

// makeWindow makes c's window, once, and joins the stripes' lanes to it.
func (c *counts) makeWindow() {
	if c.window.Load() != nil {
		return
	}
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.window.Load() != nil {
		return
	}
	w := new(liveWindow)
	live, err := rollingwindow.New[int64](1, time.Duration(b.span),
		rollingwindow.WithStart(*b.start.Load()),
		rollingwindow.OnBucketDone(func(done rollingwindow.Bucket[int64], _ int64) {
			w.done.Sum += done.Sum
			w.done.Count += done.Count
		}))
	if err != nil {
		panic("breaker: " + err.Error()) // a bucket's span is positive
	}
	w.live = live
	w.moveTo(b.live * b.span)
	join(live, &c.own.lane)
	if sp := c.spread.Load(); sp != nil {
		for i := range sp.stripes {
			join(live, &sp.stripes[i].lane)
		}
	}
	c.window.Store(w)
}

// join joins l to live; a lane joins one window, once.
func join(live *rollingwindow.RollingWindow[int64], l *rollingwindow.Lane[int64]) {
	if err := live.AddLane(l); err != nil {
		panic("breaker: " + err.Error())
	}
}

// moveTo moves the window to the bucket that begins at t, on the
// breaker's time axis, and returns the outcomes of the buckets it
// finished. Callers hold the breaker's mu.
func (w *liveWindow) moveTo(t int64) evidence.Bucket {
	w.live.PartsAtOffset(time.Duration(t))
	done := w.done
	w.done = rollingwindow.Bucket[int64]{}
	return outcomes(done)
}

// outcomes returns a window's bucket as successes and failures: its sum
// is the successes (each added 1), its count the outcomes.
func outcomes(b rollingwindow.Bucket[int64]) evidence.Bucket {
	return evidence.Bucket{Successes: b.Sum, Failures: b.Count - b.Sum}
}

func (c *counts) init(b *googleBreaker) {
	c.b = b
	c.own.counts = c
	c.own.salt.Store(rand.Uint64())
}

// pick returns the stripe a call counts on.
func (c *counts) pick() *stripe {
	if sp := c.spread.Load(); sp != nil {
		return sp.pick()
	}
	return &c.own
}

// contended spreads c over stripes, once; their lanes join c's window
// before any stripe is used.
func (c *counts) contended() {
	if c.spread.Load() != nil {
		return
	}
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if c.spread.Load() != nil {
		return
	}
	sp := &spread{stripes: new([spreadStripes]paddedStripe)}
	for i := range sp.stripes {
		sp.stripes[i].counts, sp.stripes[i].spread = c, true
		sp.stripes[i].salt.Store(rand.Uint64())
	}
	sp.pool.New = func() any {
		return &sp.stripes[(sp.handed.Add(1)-1)%spreadStripes].stripe
	}
	if w := c.window.Load(); w != nil {
		for i := range sp.stripes {
			join(w.live, &sp.stripes[i].lane)
		}
	}
	c.spread.Store(sp)
}

// sum returns the live bucket: the outcomes the window holds now, and
// what the stripes hold.
func (c *counts) sum() evidence.Bucket {
	b := c.own.live()
	if sp := c.spread.Load(); sp != nil {
		for i := range sp.stripes {
			b = b.Plus(sp.stripes[i].live())
		}
	}
	if w := c.window.Load(); w != nil {
		b = b.Plus(outcomes(w.live.Current()))
	}
	return b
}

// live returns s's share of the live bucket but the outcomes: its drops
// and, while the dependency hangs (see hangWatch), its calls out, which
// count as failures then.
func (s *stripe) live() evidence.Bucket {
	b := evidence.Bucket{Drops: dropsOf(s.decided.Load())}
	if !s.counts.b.hang.hanging.Load() {
		return b
	}
	for c := s.cohort.Load(); c != nil; c = c.older.Load() {
		if c.state.Load() == cohortOut { // an overdue cohort's calls are counted; a retired one's count when they come back
			b.Failures += max(0, c.started.Load()-c.ended.Load())
		}
	}
	return b
}

// take empties the live bucket and returns what it held, next being the
// number of the bucket that begins: the outcomes the window held, which
// it moves to bucket next, the drops, and the calls in flight that have
// become overdue (see stripe.take). A call counting at the same time
// lands in this bucket or the next, never in neither. Callers hold the
// breaker's mu.
func (c *counts) take(next int64, w *hangWatch) evidence.Bucket {
	b := c.own.take(next, w)
	if sp := c.spread.Load(); sp != nil {
		for i := range sp.stripes {
			b = b.Plus(sp.stripes[i].take(next, w))
		}
	}
	if win := c.window.Load(); win != nil {
		b = b.Plus(win.moveTo(next * c.b.span))
	}
	return b
}

// forget retires every cohort of c but the live ones, whose calls then
// count as made in bucket next: the breaker's time has started afresh,
// and the cohorts' bucket numbers mean nothing on it. Callers hold the
// breaker's mu.
func (c *counts) forget(next int64) {
	c.own.forget(next)
	if sp := c.spread.Load(); sp != nil {
		for i := range sp.stripes {
			sp.stripes[i].forget(next)
		}
	}
	if win := c.window.Load(); win != nil {
		win.moveTo(next * c.b.span) // what it held was taken a moment ago
	}
}

// exactCalls is how many outcomes (or drops) of a stripe's live bucket
// read the clock, and are judged, one by one; past them every
// sampleEvery-th does. Light traffic is thus placed and judged exactly,
// while a busy bucket reads the clock on a sixteenth of its calls: up to
// sampleEvery−1 calls per stripe after a bucket's end are counted in it
// and decided on it, and a call after an idle spell that followed a busy
// bucket may be decided on that bucket until the stripe's next reading.
const (
	exactCalls  = 32
	sampleEvery = 16
)

// due reports whether the n-th count of a stripe's live bucket reads the
// clock.
func due(n int64) bool { return n <= exactCalls || n%sampleEvery == 0 }

// judgeEvery is how many drops of a stripe's busy live bucket are judged
// once, past its first exactCalls: a drop changes the judgement only by
// the drop it counts (see tuning.DropsCounted), a few hundredths of a
// percent of a busy bucket's calls. Judging one drop in sampleEvery was a
// quarter of what a drop cost, one in 64 a tenth (in a CPU profile of
// BenchmarkBreaker_DropSystemRandom), one in 256 under 3 %. The clock is
// still read every sampleEvery drops, and a bucket's end is judged at
// once.
const judgeEvery = 16 * sampleEvery

// judgeDue reports whether the n-th drop of a stripe's live bucket that
// reads the clock, and finds the bucket live, is judged.
func judgeDue(n int64) bool { return n <= exactCalls || n%judgeEvery == 0 }

// admittedAny reports whether a stripe of c admitted a call in the live
// bucket. Callers hold the breaker's mu, before the bucket is taken.
func (c *counts) admittedAny() bool {
	if co := c.own.cohort.Load(); co != nil && co.started.Load() > 0 {
		return true
	}
	if sp := c.spread.Load(); sp != nil {
		for i := range sp.stripes {
			if co := sp.stripes[i].cohort.Load(); co != nil && co.started.Load() > 0 {
				return true
			}
		}
	}
	return false
}
