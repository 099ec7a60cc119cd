package breaker

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// record adds successes and failures to w's live bucket.
func record(w *window, successes, failures int) {
	for range successes {
		w.successes.Add(1)
	}
	for range failures {
		w.failures.Add(1)
	}
}

func assertTotals(t *testing.T, w *window, now time.Duration, successes, failures uint64, msg string) {
	t.Helper()
	c := w.snapshot(now)
	s, f := c.successes, c.failures
	assert.Equal(t, successes, s, "successes: %s", msg)
	assert.Equal(t, failures, f, "failures: %s", msg)
	cs, cf := unpack(w.completed.Load())
	assert.Equal(t, s, cs+w.successes.Load(), "the packed finished counts agree: %s", msg)
	assert.Equal(t, f, cf+w.failures.Load(), "the packed finished counts agree: %s", msg)
}

func TestWindow_at_bucketsExpireOneAtATime(t *testing.T) {
	w := newWindow(4, 10*ms, 0, 0.5)
	for i := range 4 {
		w.at(time.Duration(i) * 10 * ms)
		record(w, i+1, 1) // bucket i: i+1 successes, 1 failure
	}
	assertTotals(t, w, 39*ms, 1+2+3+4, 4, "all four buckets")
	assertTotals(t, w, 40*ms, 2+3+4, 3, "bucket 0 left")
	assertTotals(t, w, 55*ms, 3+4, 2, "bucket 1 left")
	assertTotals(t, w, 79*ms, 0, 0, "everything left, the last bucket too")
}

func TestWindow_at_jumpOverSomeBuckets(t *testing.T) {
	w := newWindow(4, 10*ms, 0, 0.5)
	record(w, 5, 5)
	w.at(10 * ms)
	record(w, 7, 0)
	assertTotals(t, w, 35*ms, 12, 5, "a jump within the window keeps both")
	assertTotals(t, w, 45*ms, 7, 0, "the first bucket left")
	assertTotals(t, w, 51*ms, 0, 0, "the second too")
}

func TestWindow_at_oneBucketForgetsOnEachTurn(t *testing.T) {
	w := newWindow(1, 10*ms, 0, 0.5)
	record(w, 3, 2)
	assertTotals(t, w, 9*ms, 3, 2, "the live bucket is the whole window")
	assertTotals(t, w, 10*ms, 0, 0, "a new bucket starts empty")
}

func TestWindow_at_clockBeforeTheLiveBucket(t *testing.T) {
	w := newWindow(4, 10*ms, 100*ms, 0.5)
	record(w, 1, 1)
	assertTotals(t, w, -time.Hour, 1, 1, "a clock stepped back keeps the live bucket")
	record(w, 1, 0)
	assertTotals(t, w, 139*ms, 2, 1, "and the window runs on from where it was")
	assertTotals(t, w, 140*ms, 0, 0, "")
}

func TestWindow_advance_anotherGoroutineAdvancing(t *testing.T) {
	w := newWindow(4, 10*ms, 0, 0.5)
	record(w, 1, 0)
	w.mu.Lock() // as if another goroutine were advancing
	w.at(100 * ms)
	assert.Equal(t, int64(10*ms), w.next.Load(), "a call does not wait: it carries on with the buckets as they are")
	w.mu.Unlock()
	assertTotals(t, w, 100*ms, 0, 0, "the next call advances")
}

func TestPack_saturates(t *testing.T) {
	s, f := unpack(pack(7, 9))
	assert.Equal(t, []uint64{7, 9}, []uint64{s, f})
	s, f = unpack(pack(1<<40, 1<<33))
	assert.Equal(t, []uint64{maxCount, maxCount}, []uint64{s, f}, "counts past 2^32−1 stay at the maximum")
}

func TestWindow_hugeBucketSaturates(t *testing.T) {
	w := newWindow(4, 10*ms, 0, 0.5)
	w.successes.Add(1 << 40) // as 2^40 calls would
	w.failures.Add(3)
	w.drops.Add(1 << 33)
	assertTotals(t, w, 10*ms, maxCount, 3, "a finished bucket saturates")
	assert.Equal(t, uint64(maxCount), w.snapshot(10*ms).drops)
	assertTotals(t, w, 50*ms, 0, 0, "and leaves the window whole")
}

func TestWindow_concurrentRecordsAndAdvancesAddUp(t *testing.T) {
	w := newWindow(1000, 10*ms, 0, 0.5) // 10 s: nothing expires below
	const goroutines, perGoroutine = 8, 3000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGoroutine {
				w.at(time.Duration(i) * ms) // each goroutine walks the clock forward
				if g%2 == 0 {
					w.successes.Add(1)
				} else {
					w.failures.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assertTotals(t, w, 3*time.Second, goroutines/2*perGoroutine, goroutines/2*perGoroutine, "no outcome is lost")
}

func TestBreaker_systemClock_recordsAndSheds(t *testing.T) {
	b, err := New(WithK(1), WithProtection(0))
	require.NoError(t, err)
	g := b.(*googleBreaker)
	require.Nil(t, g.clock, "the default clock is the coarse one")
	for range 1000 {
		if p, err := b.Allow(); err == nil {
			p.Reject("down")
		}
	}
	dropped := 0
	for range 1000 {
		if _, err := b.Allow(); err != nil {
			dropped++
		}
	}
	assert.Greater(t, dropped, 900, "a breaker on the system clock sheds like one on a mock")
	assert.WithinDuration(t, time.Now(), g.reasons.ring[0].at, time.Minute, "reasons carry the wall time")
}
