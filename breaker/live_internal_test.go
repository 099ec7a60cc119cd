package breaker

import (
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCounts_contendedSpreadsAndKeepsEveryCount(t *testing.T) {
	b := MustNew().(*googleBreaker)
	b.counts.contended()
	sp := b.counts.spread.Load()
	require.NotNil(t, sp)

	const goroutines, perGoroutine = 4, 1000
	inParallel(goroutines, perGoroutine, func() {
		s := b.counts.pick()
		assert.True(t, s.spread, "a contended level counts on its stripes")
		promise{s.admitted()}.Accept()
	})
	assert.Equal(t, int64(goroutines*perGoroutine), b.counts.sum().Successes)
	assert.Equal(t, int64(goroutines*perGoroutine), b.counts.take(1, &b.hang).Successes)
	assert.Zero(t, b.counts.sum().Successes, "take empties every stripe")
}

func TestCounts_pickKeepsAProcessorOnItsStripe(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops a quarter of what a sync.Pool is given")
	}
	b := MustNew().(*googleBreaker)
	b.counts.contended()
	first := b.counts.pick()
	same := 0
	for range 1000 {
		if b.counts.pick() == first {
			same++
		}
	}
	// A garbage collection or a move to another processor may hand
	// another stripe now and then; most picks find the same one.
	assert.Greater(t, same, 900)
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { b.counts.pick() }))
}

func TestStripe_size(t *testing.T) {
	assert.Equal(t, uintptr(stripeFields), unsafe.Sizeof(stripe{}), "paddedStripe pads to 128 bytes from stripeFields")
	assert.Equal(t, uintptr(128), unsafe.Sizeof(paddedStripe{}))
	assert.Equal(t, uintptr(cohortFields), unsafe.Offsetof(cohort{}.seen)+unsafe.Sizeof(int64(0)), "cohort pads to 128 bytes from cohortFields")
	assert.Equal(t, uintptr(128), unsafe.Sizeof(cohort{}))
}

// The draws of the system's randomness, a hash of each stripe's count of
// decisions: the share dropped is p, a drop says nothing of the next
// decision, and a bucket's draws are not the last bucket's.
func TestStripe_decide_drawsAreUniformAndIndependent(t *testing.T) {
	b := MustNew().(*googleBreaker)
	s := &b.counts.own
	const n, p = 200_000, 0.3
	drops, pairs := 0, 0
	var first [64]bool
	prev := false
	for i := range n {
		d, ok := s.decide(threshold(p), s.decided.Load())
		require.True(t, ok, "one goroutine's decision always counts")
		if d {
			drops++
			if prev {
				pairs++
			}
		}
		if i < len(first) {
			first[i] = d
		}
		prev = d
	}
	// Binomial: the standard deviation of the share is about 0.001.
	assert.InDelta(t, p, float64(drops)/n, 0.005, "share dropped")
	assert.InDelta(t, p*p, float64(pairs)/(n-1), 0.005, "a drop followed by a drop")
	assert.Equal(t, int64(drops), b.counts.sum().Drops)

	got := b.counts.take(1, &b.hang)
	assert.Equal(t, int64(drops), got.Drops)
	var again [64]bool
	for i := range again {
		again[i], _ = s.decide(threshold(p), s.decided.Load())
	}
	assert.NotEqual(t, first, again, "a new bucket draws anew")
}

func TestStripe_decide_concurrentDecisionsAllCount(t *testing.T) {
	b := MustNew().(*googleBreaker)
	const goroutines, perGoroutine = 4, 5000
	var dropped atomic.Int64
	inParallel(goroutines, perGoroutine, func() {
		s := b.counts.pick()
		drop, ok := s.decide(threshold(0.5), s.decided.Load())
		if !ok { // as admit does
			drop = s.redecide(0.5, nil)
		}
		if drop {
			dropped.Add(1)
		}
	})
	assert.Equal(t, dropped.Load(), b.counts.sum().Drops)
	var admitted int64
	for _, s := range b.stripes() {
		admitted += s.decided.Load() >> 32
	}
	assert.Equal(t, int64(goroutines*perGoroutine), dropped.Load()+admitted)
}

// stripes returns the breaker's default level's stripes.
func (b *googleBreaker) stripes() []*stripe {
	out := []*stripe{&b.counts.own}
	if sp := b.counts.spread.Load(); sp != nil {
		for i := range sp.stripes {
			out = append(out, &sp.stripes[i].stripe)
		}
	}
	return out
}

func TestCounted_dropsSaturate(t *testing.T) {
	assert.Equal(t, int64(1), counted(0, true))
	assert.Equal(t, int64(admittedOne), counted(0, false))
	full := int64(3*admittedOne + dropMask)
	assert.Equal(t, int64(dropMask), dropsOf(counted(full, true)), "the drops stay at their bound")
	assert.NotEqual(t, full, counted(full, true), "the word still changes")
}

// inParallel runs f n times on each of goroutines goroutines, and returns
// when all are done.
func inParallel(goroutines, n int, f func()) {
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				f()
			}
		}()
	}
	wg.Wait()
}

func TestThreshold_boundsOfTheDraw(t *testing.T) {
	const maxDraw = 1<<53 - 1
	assert.True(t, maxDraw < threshold(1), "p 1 drops every call")
	assert.False(t, 0 < threshold(0), "p 0 drops none")
	assert.Equal(t, uint64(1<<52), threshold(0.5))
	for _, n := range []int64{0, 1, 1 << 40, -1} {
		assert.LessOrEqual(t, draw(0x1234, n), uint64(maxDraw))
	}
}
