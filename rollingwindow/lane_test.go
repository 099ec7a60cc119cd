package rollingwindow_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

// joinedLanes returns n lanes joined to w.
func joinedLanes[T rollingwindow.Numeric](t *testing.T, w *rollingwindow.RollingWindow[T], n int) []*rollingwindow.Lane[T] {
	t.Helper()
	lanes := make([]*rollingwindow.Lane[T], n)
	for i := range lanes {
		lanes[i] = new(rollingwindow.Lane[T])
		require.NoError(t, w.AddLane(lanes[i]))
	}
	return lanes
}

func TestWindow_AddLane_countsInEveryRead(t *testing.T) {
	w, _ := newWindow(t, 3)
	lanes := joinedLanes(t, w, 2)
	lanes[0].Add(1)
	lanes[1].Add(0)
	lanes[1].Add(5)
	w.AddCurrent(2) // the window's own lane counts beside the joined ones

	want := rollingwindow.Bucket[int64]{Sum: 8, Count: 4}
	sum, count := w.Totals()
	assert.Equal(t, want.Sum, sum, "Totals: sum")
	assert.Equal(t, want.Count, count, "Totals: count")
	done, cur := w.Parts()
	assert.Equal(t, rollingwindow.Bucket[int64]{}, done, "Parts: nothing finished yet")
	assert.Equal(t, want, cur, "Parts: current")
	assert.Equal(t, want, w.Current())
	assert.Equal(t, []int64{0, 0, 8}, sums(w), "Reduce: the lanes' values are in the newest bucket")
	assert.Equal(t, want, w.Lifetime())
}

func TestWindow_AddLane_valuesMoveWithTheBucket(t *testing.T) {
	type report struct {
		done   rollingwindow.Bucket[int64]
		passed int64
	}
	var reports []report
	w, m := newWindow(t, 3, rollingwindow.OnBucketDone(func(done rollingwindow.Bucket[int64], passed int64) {
		reports = append(reports, report{done, passed})
	}))
	lanes := joinedLanes(t, w, 2)
	lanes[0].Add(1)
	lanes[0].Add(1)
	lanes[1].Add(0)

	m.Add(interval)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 2, Count: 3}, w.Current(), "the window has not moved yet")
	assert.Equal(t, []int64{0, 2, 0}, sums(w), "the lanes' values finish with their bucket")
	require.Equal(t, []report{{done: rollingwindow.Bucket[int64]{Sum: 2, Count: 3}}}, reports, "OnBucketDone sees the lanes' values")
	assert.Equal(t, rollingwindow.Bucket[int64]{}, w.Current(), "the lanes start the new bucket empty")

	lanes[1].Add(4)
	assert.Equal(t, []int64{0, 2, 4}, sums(w))
	m.Add(3 * interval) // both buckets expire
	sum, count := w.Totals()
	assert.Equal(t, int64(0), sum)
	assert.Equal(t, int64(0), count)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 6, Count: 4}, w.Lifetime(), "Lifetime keeps what expired")
	require.Len(t, reports, 2)
	assert.Equal(t, report{done: rollingwindow.Bucket[int64]{Sum: 4, Count: 1}, passed: 2}, reports[1])
}

// A lane adds without reading the clock, like AddCurrent: its values land
// in the bucket of the newest time the window was given.
func TestLane_Add_countsInTheWindowsCurrentBucket(t *testing.T) {
	w, m := newWindow(t, 3)
	l := joinedLanes(t, w, 1)[0]
	l.Add(1)
	m.Add(interval)
	l.Add(2) // the window was not given the new time
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 3, Count: 2}, w.Current())
	assert.Equal(t, []int64{0, 3, 0}, sums(w))
}

func TestWindow_AddLane_joinedTwice(t *testing.T) {
	w, _ := newWindow(t, 3)
	other, _ := newWindow(t, 3)
	l := joinedLanes(t, w, 1)[0]
	assert.ErrorIs(t, w.AddLane(l), rollingwindow.ErrLaneJoined, "the same window")
	assert.ErrorIs(t, other.AddLane(l), rollingwindow.ErrLaneJoined, "another window")

	l.Add(3)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 3, Count: 1}, w.Current(), "the lane still counts once, for its window")
	assert.Equal(t, rollingwindow.Bucket[int64]{}, other.Current(), "and not for the other")
}

func TestWindow_AddLane_nil(t *testing.T) {
	w, _ := newWindow(t, 3)
	assert.EqualError(t, w.AddLane(nil), "rollingwindow: AddLane(nil): lane must not be nil")
}

func TestLane_Add_notJoinedPanics(t *testing.T) {
	var l rollingwindow.Lane[int64]
	assert.PanicsWithValue(t, "rollingwindow: Add on a Lane that joined no window (see RollingWindow.AddLane)", func() { l.Add(1) })
}

func TestWindow_AddLane_floatWindowsTakeNoLane(t *testing.T) {
	w, err := rollingwindow.New[float64](3, interval)
	require.NoError(t, err)
	var l rollingwindow.Lane[float64]
	assert.EqualError(t, w.AddLane(&l), "rollingwindow: AddLane: lanes join windows of integer types, not float64")
	assert.PanicsWithValue(t, "rollingwindow: Add on a Lane that joined no window (see RollingWindow.AddLane)", func() { l.Add(1) })

	w32, err := rollingwindow.New[float32](3, interval)
	require.NoError(t, err)
	var l32 rollingwindow.Lane[float32]
	assert.EqualError(t, w32.AddLane(&l32), "rollingwindow: AddLane: lanes join windows of integer types, not float32")
}

// Every value added from many goroutines, on the window's lanes and on
// joined ones, while the clock moves, is counted once: in the buckets
// OnBucketDone reports or in the current one.
func TestWindow_AddCurrent_concurrentWhileTheClockMoves(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []rollingwindow.Option
	}{
		{name: "clock on every add"},
		{name: "clock every 4", opts: []rollingwindow.Option{rollingwindow.WithClockEvery(4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var reported rollingwindow.Bucket[int64]
			opts := append([]rollingwindow.Option{rollingwindow.OnBucketDone(func(done rollingwindow.Bucket[int64], _ int64) {
				mu.Lock() // runs under the window's lock; the mutex is for the test's final read
				reported.Sum += done.Sum
				reported.Count += done.Count
				mu.Unlock()
			})}, tc.opts...)
			w, m := newWindow(t, 4, opts...)

			const writers, adds = 8, 3000
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range writers {
				var l *rollingwindow.Lane[int64]
				if g%4 == 3 { // some writers stripe themselves
					l = joinedLanes(t, w, 1)[0]
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range adds {
						v := int64(i % 3) // 0, 1 and 2: a failure, a success and another value
						switch {
						case l != nil:
							l.Add(v)
						case i%2 == 0:
							w.Add(v)
						default:
							w.AddCurrent(v)
						}
					}
				}()
			}
			moved := make(chan struct{})
			go func() {
				defer close(moved)
				for range 10 {
					select {
					case <-stop:
						return
					default:
					}
					m.Add(interval)
					w.Totals()
				}
			}()
			wg.Wait()
			close(stop)
			<-moved

			var want rollingwindow.Bucket[int64]
			for i := range adds {
				want.Sum += int64(i%3) * writers
			}
			want.Count = writers * adds
			assert.Equal(t, want, w.Lifetime(), "every value counted once")
			_, cur := w.Parts()
			mu.Lock()
			got := plus(reported, cur)
			mu.Unlock()
			assert.Equal(t, want, got, "the finished buckets and the current one hold everything")
		})
	}
}

// plus returns the sum of two buckets.
func plus(a, b rollingwindow.Bucket[int64]) rollingwindow.Bucket[int64] {
	return rollingwindow.Bucket[int64]{Sum: a.Sum + b.Sum, Count: a.Count + b.Count}
}

func TestWindow_AddLane_concurrentWithAdds(t *testing.T) {
	w, m := newWindow(t, 2)
	var wg sync.WaitGroup
	const joiners = 4
	for range joiners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := new(rollingwindow.Lane[int64])
			if !assert.NoError(t, w.AddLane(l)) {
				return
			}
			for range 500 {
				l.Add(1)
				w.AddCurrent(1)
			}
		}()
	}
	wg.Wait()
	m.Add(time.Minute)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: joiners * 1000, Count: joiners * 1000}, w.Lifetime())
}

// Two windows given one lane at once: one joins it, the other hears
// ErrLaneJoined, and neither writes the lane after the other (go test
// -race).
func TestWindow_AddLane_oneLaneTwoWindowsAtOnce(t *testing.T) {
	a, _ := newWindow(t, 2)
	b, _ := newWindow(t, 2)
	for range 20 {
		l := new(rollingwindow.Lane[int64])
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, w := range []*rollingwindow.RollingWindow[int64]{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = w.AddLane(l)
			}()
		}
		wg.Wait()
		joined := 0
		for _, err := range errs {
			if err == nil {
				joined++
			} else {
				assert.ErrorIs(t, err, rollingwindow.ErrLaneJoined)
			}
		}
		assert.Equal(t, 1, joined, "exactly one window joins the lane")
	}
}
