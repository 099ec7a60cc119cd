package breaker

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// stripe counts one share of the live bucket of one level: the outcomes
// recorded and the calls dropped since the bucket began. A level counts on
// one stripe until two goroutines are seen writing it at once, then on
// spreadStripes of them, each on a cache line of its own, picked at random
// per call: the call path then writes memory no other core is writing.
type stripe struct {
	counts                     *counts // the level's live bucket this stripe is part of
	spread                     bool    // one of counts.spread: written with Add, not watched for contention
	successes, failures, drops atomic.Int64
}

// spreadStripes is how many stripes a contended level counts on.
const spreadStripes = 8

// paddedStripe keeps a stripe on a cache line of its own.
type paddedStripe struct {
	stripe
	_ [64 - 40]byte
}

// counts is the live bucket of one level.
type counts struct {
	b      *googleBreaker
	own    stripe
	spread atomic.Pointer[[spreadStripes]paddedStripe] // nil until contention was seen
}

func (c *counts) init(b *googleBreaker) {
	c.b = b
	c.own.counts = c
}

// pick returns the stripe a call counts on.
func (c *counts) pick() *stripe {
	if sp := c.spread.Load(); sp != nil {
		return &sp[rand.Uint32()%spreadStripes].stripe
	}
	return &c.own
}

// contended spreads c over stripes, once.
func (c *counts) contended() {
	if c.spread.Load() != nil {
		return
	}
	sp := new([spreadStripes]paddedStripe)
	for i := range sp {
		sp[i].counts, sp[i].spread = c, true
	}
	c.spread.CompareAndSwap(nil, sp)
}

// add adds 1 to n and returns its new value. On the level's own stripe, a
// failed compare-and-swap is another goroutine writing at the same time:
// the level spreads.
func (s *stripe) add(n *atomic.Int64) int64 {
	if !s.spread {
		if old := n.Load(); n.CompareAndSwap(old, old+1) {
			return old + 1
		}
		s.counts.contended()
	}
	return n.Add(1)
}

// sum returns the live bucket: what the stripes hold now.
func (c *counts) sum() evidence.Bucket {
	b := evidence.Bucket{Successes: c.own.successes.Load(), Failures: c.own.failures.Load(), Drops: c.own.drops.Load()}
	if sp := c.spread.Load(); sp != nil {
		for i := range sp {
			s := &sp[i]
			b = b.Plus(evidence.Bucket{Successes: s.successes.Load(), Failures: s.failures.Load(), Drops: s.drops.Load()})
		}
	}
	return b
}

// take empties the live bucket and returns what it held. A call counting
// at the same time lands in this bucket or the next, never in neither.
func (c *counts) take() evidence.Bucket {
	b := evidence.Bucket{Successes: c.own.successes.Swap(0), Failures: c.own.failures.Swap(0), Drops: c.own.drops.Swap(0)}
	if sp := c.spread.Load(); sp != nil {
		for i := range sp {
			s := &sp[i]
			b = b.Plus(evidence.Bucket{Successes: s.successes.Swap(0), Failures: s.failures.Swap(0), Drops: s.drops.Swap(0)})
		}
	}
	return b
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

// markSuccess records a success on s. When due, it reads the clock first,
// so that the success lands in the bucket of its time; it judges after,
// with the success counted, when due or while calls are being dropped.
func (s *stripe) markSuccess() {
	b := s.counts.b
	if !due(s.successes.Load() + 1) {
		s.add(&s.successes)
		if b.mode.Load()&modeShedding != 0 {
			b.judge()
		}
		return
	}
	b.advanceIfDue()
	s.add(&s.successes)
	if b.mode.Load() != 0 {
		b.judge()
	}
}

// markFailure records a failure on s: it always reads the clock, and
// judges.
func (s *stripe) markFailure(reason string) {
	b := s.counts.b
	b.advanceIfDue()
	s.add(&s.failures)
	b.reasons.add(b.wallNow(), reason)
	b.setMode(modeFailing)
	b.judge()
}
