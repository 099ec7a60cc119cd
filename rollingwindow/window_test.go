package rollingwindow_test

import (
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

const interval = 100 * time.Millisecond

func newMock() *clock.Mock {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return m
}

func newWindow(t *testing.T, size int, opts ...rollingwindow.Option) (*rollingwindow.RollingWindow[int64], *clock.Mock) {
	t.Helper()
	m := newMock()
	w, err := rollingwindow.New[int64](size, interval, append([]rollingwindow.Option{rollingwindow.WithClock(m)}, opts...)...)
	require.NoError(t, err)
	return w, m
}

func sums(w *rollingwindow.RollingWindow[int64]) []int64 {
	var out []int64
	w.Reduce(func(b rollingwindow.Bucket[int64]) { out = append(out, b.Sum) })
	return out
}

func TestNew_invalidArguments(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int
		interval time.Duration
		opts     []rollingwindow.Option
		want     string
	}{
		{name: "zero size", size: 0, interval: time.Second, want: "rollingwindow: size 0: must be at least 1"},
		{name: "negative size", size: -3, interval: time.Second, want: "rollingwindow: size -3: must be at least 1"},
		{name: "zero interval", size: 1, interval: 0, want: "rollingwindow: interval 0s: must be positive"},
		{name: "negative interval", size: 1, interval: -time.Second, want: "rollingwindow: interval -1s: must be positive"},
		{name: "nil clock", size: 1, interval: time.Second, opts: []rollingwindow.Option{rollingwindow.WithClock(nil)}, want: "rollingwindow: WithClock(nil): clock must not be nil"},
		{name: "clock every 0", size: 1, interval: time.Second, opts: []rollingwindow.Option{rollingwindow.WithClockEvery(0)}, want: "rollingwindow: WithClockEvery(0): must be at least 1"},
		{name: "clock every -1", size: 1, interval: time.Second, opts: []rollingwindow.Option{rollingwindow.WithClockEvery(-1)}, want: "rollingwindow: WithClockEvery(-1): must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := rollingwindow.New[int](tc.size, tc.interval, tc.opts...)
			assert.Nil(t, w)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestWindow_Add_sumsAndCounts(t *testing.T) {
	w, _ := newWindow(t, 3)
	w.Add(1)
	w.Add(0)
	w.Add(5)
	sum, count := w.Totals()
	assert.Equal(t, int64(6), sum)
	assert.Equal(t, int64(3), count)
	assert.Equal(t, []int64{0, 0, 6}, sums(w), "everything lands in the newest bucket")
}

func TestWindow_Add_rotatesOneBucketPerInterval(t *testing.T) {
	w, m := newWindow(t, 3)
	w.Add(1)
	m.Add(interval)
	w.Add(2)
	m.Add(interval)
	w.Add(3)
	assert.Equal(t, []int64{1, 2, 3}, sums(w))

	m.Add(interval)
	assert.Equal(t, []int64{2, 3, 0}, sums(w), "the oldest bucket expires")
	w.Add(4)
	assert.Equal(t, []int64{2, 3, 4}, sums(w))
	sum, count := w.Totals()
	assert.Equal(t, int64(9), sum)
	assert.Equal(t, int64(3), count)
}

func TestWindow_Add_alignedToStart(t *testing.T) {
	w, m := newWindow(t, 3)
	m.Add(interval - time.Nanosecond)
	w.Add(1)
	assert.Equal(t, []int64{0, 0, 1}, sums(w), "just before the first boundary is still the first bucket")
	m.Add(time.Nanosecond)
	w.Add(2)
	assert.Equal(t, []int64{0, 1, 2}, sums(w), "the boundary is start + interval exactly")
	m.Add(interval / 2)
	w.Add(3)
	m.Add(interval/2 - time.Nanosecond)
	w.Add(4)
	assert.Equal(t, []int64{0, 1, 9}, sums(w), "boundaries do not move with the time of the last write")
}

func TestWindow_Add_afterLongIdle(t *testing.T) {
	for _, gap := range []time.Duration{3 * interval, 3*interval + time.Nanosecond, time.Hour, 200 * 365 * 24 * time.Hour} {
		t.Run(gap.String(), func(t *testing.T) {
			w, m := newWindow(t, 3)
			w.Add(7)
			m.Add(interval)
			w.Add(8)
			m.Add(gap)
			sum, count := w.Totals()
			assert.Equal(t, int64(0), sum)
			assert.Equal(t, int64(0), count)
			assert.Equal(t, []int64{0, 0, 0}, sums(w))
			w.Add(9)
			sum, count = w.Totals()
			assert.Equal(t, int64(9), sum)
			assert.Equal(t, int64(1), count)
		})
	}
}

func TestWindow_Add_gapShorterThanWindowKeepsRecentBuckets(t *testing.T) {
	w, m := newWindow(t, 4)
	for v := int64(1); v <= 4; v++ {
		w.Add(v)
		m.Add(interval)
	}
	// Now in bucket 4; buckets 1..3 are kept, bucket 0 expired.
	m.Add(2 * interval)
	assert.Equal(t, []int64{4, 0, 0, 0}, sums(w))
	sum, count := w.Totals()
	assert.Equal(t, int64(4), sum)
	assert.Equal(t, int64(1), count)
}

func TestWindow_IgnoreCurrentBucket(t *testing.T) {
	w, m := newWindow(t, 3, rollingwindow.IgnoreCurrentBucket())
	w.Add(1)
	m.Add(interval)
	w.Add(2)
	m.Add(interval)
	w.Add(3)
	assert.Equal(t, []int64{1, 2}, sums(w), "the bucket being written is left out")
	sum, count := w.Totals()
	assert.Equal(t, int64(3), sum)
	assert.Equal(t, int64(2), count)

	m.Add(interval)
	assert.Equal(t, []int64{2, 3}, sums(w))
	sum, count = w.Totals()
	assert.Equal(t, int64(5), sum)
	assert.Equal(t, int64(2), count)
}

func TestWindow_IgnoreCurrentBucket_sizeOne(t *testing.T) {
	w, _ := newWindow(t, 1, rollingwindow.IgnoreCurrentBucket())
	w.Add(3)
	assert.Empty(t, sums(w))
	sum, count := w.Totals()
	assert.Equal(t, int64(0), sum)
	assert.Equal(t, int64(0), count)
}

func TestWindow_Add_clockStepsBackwardsWithinWindow(t *testing.T) {
	w, m := newWindow(t, 3)
	m.Add(interval)
	w.Add(1)
	m.Add(-2 * interval) // back, but not past the window's oldest bucket
	w.Add(2)
	sum, count := w.Totals()
	assert.Equal(t, int64(3), sum, "nothing recorded is lost")
	assert.Equal(t, int64(2), count)
	assert.Equal(t, []int64{0, 0, 3}, sums(w), "writes go to the current bucket")

	m.Add(3 * interval) // past where it was, by one interval
	w.Add(4)
	assert.Equal(t, []int64{0, 3, 4}, sums(w))
}

// A clock stepped back by more than the window would otherwise freeze the
// window with stale values until it caught up (issue 11, item 6).
func TestWindow_Add_clockStepsBackPastWindowStartsAfresh(t *testing.T) {
	w, m := newWindow(t, 3)
	w.Add(1)
	m.Set(m.Now().Add(-3 * time.Hour))
	w.Add(2)
	assert.Equal(t, []int64{0, 0, 2}, sums(w), "the old values are gone")

	m.Add(interval) // time moves on from the new reading
	w.Add(4)
	assert.Equal(t, []int64{0, 2, 4}, sums(w))
}

// A clock that jumps centuries ahead, or read the zero time when the window
// was made, must not leave the window frozen (issue 11, item 6).
func TestWindow_Add_extremeClocksStillMove(t *testing.T) {
	for name, first := range map[string]time.Time{
		"zero time at creation": {},
		"300 years back":        time.Date(1724, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		t.Run(name, func(t *testing.T) {
			m := clock.NewMock()
			m.Set(first)
			w, err := rollingwindow.New[int64](3, interval, rollingwindow.WithClock(m))
			require.NoError(t, err)
			m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
			w.Add(1)
			w.Add(2)
			assert.Equal(t, []int64{0, 0, 3}, sums(w))
			m.Add(interval)
			w.Add(4)
			assert.Equal(t, []int64{0, 3, 4}, sums(w))
			m.Add(3 * interval)
			sum, count := w.Totals()
			assert.Equal(t, int64(0), sum, "everything expires a window later")
			assert.Equal(t, int64(0), count)
		})
	}
}

func TestWindow_Reduce_mayCallBackIntoTheWindow(t *testing.T) {
	w, _ := newWindow(t, 2)
	w.Add(1)
	calls := 0
	w.Reduce(func(rollingwindow.Bucket[int64]) {
		calls++
		w.Add(1) // would deadlock if fn ran under the window's lock
	})
	assert.Equal(t, 2, calls)
}

func TestWindow_Totals_floatDoesNotDrift(t *testing.T) {
	m := newMock()
	w, err := rollingwindow.New[float64](2, interval, rollingwindow.WithClock(m))
	require.NoError(t, err)
	for range 50 {
		w.Add(0.1)
		w.Add(0.2)
		m.Add(interval)
	}
	m.Add(interval)
	sum, count := w.Totals()
	assert.Equal(t, 0.0, sum, "an emptied window sums to exactly zero")
	assert.Equal(t, int64(0), count)
}

func TestWindow_Add_concurrentWhileClockMoves(t *testing.T) {
	w, m := newWindow(t, 1000) // 100 s: nothing expires while the test runs
	const goroutines, perGoroutine = 8, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGoroutine {
				w.Add(int64(g + i%2))
				if i%500 == 0 {
					w.Totals()
				}
			}
		}()
	}
	for range 20 {
		m.Add(interval)
	}
	wg.Wait()
	sum, count := w.Totals()
	assert.Equal(t, int64(goroutines*perGoroutine), count)
	want := int64(0)
	for g := range goroutines {
		want += int64(g*perGoroutine + perGoroutine/2)
	}
	assert.Equal(t, want, sum)
	var reduced rollingwindow.Bucket[int64]
	w.Reduce(func(b rollingwindow.Bucket[int64]) { reduced.Sum += b.Sum; reduced.Count += b.Count })
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: want, Count: count}, reduced, "Reduce and Totals agree")
}

func TestWindow_Totals_noAllocations(t *testing.T) {
	w, err := rollingwindow.New[int64](40, 250*time.Millisecond)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() {
		w.Add(1)
		w.Totals()
	})
	assert.Equal(t, 0.0, allocs)
}

// Windows given one start take the same offsets: one reading of the clock,
// converted once, serves them all, and lands in the same buckets as the
// time-based methods.
func TestWindow_offsetsShareAStart(t *testing.T) {
	m := newMock()
	start := m.Now()
	a, err := rollingwindow.New[int64](3, interval, rollingwindow.WithClock(m), rollingwindow.WithStart(start))
	require.NoError(t, err)
	m.Add(time.Hour) // b is made later, on a's start
	b, err := rollingwindow.New[int64](3, interval, rollingwindow.WithClock(m), rollingwindow.WithStart(start))
	require.NoError(t, err)
	assert.Equal(t, start, a.Start())
	assert.Equal(t, start, b.Start())

	d := a.Offset(m.Now())
	assert.Equal(t, time.Hour, d)
	a.AddAtOffset(d, 1)
	b.AddAtOffset(d, 2)
	b.AddAt(m.Now(), 3)
	m.Add(interval)
	a.Add(4)
	assert.Equal(t, []int64{0, 1, 4}, sums(a))
	assert.Equal(t, []int64{0, 5, 0}, sums(b))

	sum, count := b.TotalsAtOffset(d + interval)
	assert.Equal(t, int64(5), sum)
	assert.Equal(t, int64(2), count)
}

func TestWindow_Parts(t *testing.T) {
	w, m := newWindow(t, 3)
	w.Add(1)
	w.Add(0)
	m.Add(interval)
	w.Add(5)
	done, cur := w.Parts()
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 1, Count: 2}, done)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 5, Count: 1}, cur)
	sum, count := w.Totals()
	assert.Equal(t, done.Sum+cur.Sum, sum, "Totals adds the parts up")
	assert.Equal(t, done.Count+cur.Count, count)

	m.Add(3 * interval)
	done, cur = w.PartsAt(m.Now())
	assert.Zero(t, done)
	assert.Zero(t, cur)
}

// A time more than 2⁶² ns from the start becomes the start: the window
// starts afresh there, and offsets count from it.
func TestWindow_Offset_farFromTheStartRestartsThere(t *testing.T) {
	w, m := newWindow(t, 3)
	w.Add(1)
	far := m.Now().AddDate(200, 0, 0)
	assert.Equal(t, time.Duration(0), w.Offset(far))
	assert.Equal(t, far, w.Start())
	sum, count := w.TotalsAtOffset(0)
	assert.Zero(t, sum, "the window started afresh")
	assert.Zero(t, count)
	assert.Equal(t, interval, w.Offset(far.Add(interval)))
}

func TestWindow_offsetsNeverAllocate(t *testing.T) {
	w, _ := newWindow(t, 3)
	d := time.Duration(0)
	allocs := testing.AllocsPerRun(100, func() {
		d += interval / 3
		w.AddAtOffset(d, 1)
		w.TotalsAtOffset(d)
		w.PartsAtOffset(d)
	})
	assert.Zero(t, allocs)
}

// On the system clock the window reads time.Since(start): a start given
// with WithStart, which carries no monotonic reading, is measured on the
// wall clock as Offset(time.Now()) measures it.
func TestWindow_Add_systemClockWithAStartGiven(t *testing.T) {
	const size, step = 10, time.Hour
	w, err := rollingwindow.New[int64](size, step, rollingwindow.WithStart(time.Now().Add(-2*step-step/2).Round(0)))
	require.NoError(t, err)
	w.Add(1)
	d := w.Offset(time.Now())
	assert.InDelta(t, float64(2*step+step/2), float64(d), float64(time.Minute), "the offset is the time since the start")
	var got []int64
	w.Reduce(func(b rollingwindow.Bucket[int64]) { got = append(got, b.Count) })
	assert.Equal(t, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, got, "the value is in the current bucket, the third since the start")
	done, cur := w.Parts()
	assert.Equal(t, rollingwindow.Bucket[int64]{}, done)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 1, Count: 1}, cur)
}

// A start so far from now that the offset would overflow starts the
// window afresh from now, on the system clock too.
func TestWindow_Add_systemClockFarFromTheStart(t *testing.T) {
	w, err := rollingwindow.New[int64](3, time.Second, rollingwindow.WithStart(time.Time{}), rollingwindow.WithClockEvery(4))
	require.NoError(t, err)
	w.Add(1)
	sum, count := w.Totals()
	assert.Equal(t, int64(1), sum)
	assert.Equal(t, int64(1), count)
	assert.WithinDuration(t, time.Now(), w.Start(), time.Minute, "the window started afresh from now")
}

func TestWindow_lanesNeverAllocate(t *testing.T) {
	w, err := rollingwindow.New[int64](40, 250*time.Millisecond, rollingwindow.WithClockEvery(16))
	require.NoError(t, err)
	var l rollingwindow.Lane[int64]
	require.NoError(t, w.AddLane(&l))
	allocs := testing.AllocsPerRun(1000, func() {
		w.Add(1)
		w.AddCurrent(0)
		l.Add(1)
		w.Current()
	})
	assert.Equal(t, 0.0, allocs)
}
