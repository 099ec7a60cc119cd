package rollingwindow

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPaddedLane_size(t *testing.T) {
	assert.Equal(t, uintptr(laneFields), unsafe.Sizeof(Lane[int64]{}), "laneFields is a Lane's size")
	assert.Equal(t, uintptr(128), unsafe.Sizeof(paddedLane[int64]{}), "a padded lane fills a pair of cache lines")
	assert.Equal(t, uintptr(128), unsafe.Sizeof(paddedLane[float32]{}))
}

// What the window's own lane held before the window spread still counts,
// in every read and when the bucket finishes.
func TestWindow_spreadOut_losesNothing(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	var dones []Bucket[int64]
	w, err := New[int64](3, time.Second, WithClock(m), OnBucketDone(func(done Bucket[int64], _ int64) {
		dones = append(dones, done)
	}))
	require.NoError(t, err)
	for range 5 {
		w.AddCurrent(1)
	}
	w.Add(3)
	require.Nil(t, w.spread.Load(), "one goroutine adding does not spread the window")

	w.spreadOut()
	sp := w.spread.Load()
	require.NotNil(t, sp)
	w.spreadOut()
	assert.Same(t, sp, w.spread.Load(), "a window spreads once")
	assert.NotSame(t, &w.own, w.lane(), "adds go to the spread lanes now")

	w.AddCurrent(2)
	w.Add(0)
	want := Bucket[int64]{Sum: 10, Count: 8}
	assert.Equal(t, want, w.Current(), "the own lane's values and the spread lanes' add up")
	sum, count := w.Totals()
	assert.Equal(t, want.Sum, sum)
	assert.Equal(t, want.Count, count)
	assert.Equal(t, want, w.Lifetime())

	m.Add(time.Second)
	w.Add(4)
	require.Equal(t, []Bucket[int64]{want}, dones, "the finished bucket holds both")
	assert.Equal(t, Bucket[int64]{}, w.own.load(), "the own lane was emptied with the bucket")
	assert.Equal(t, Bucket[int64]{Sum: 4, Count: 1}, w.Current())
	assert.Equal(t, Bucket[int64]{Sum: 14, Count: 9}, w.Lifetime())
}

// Goroutines adding while the window spreads under them lose nothing:
// whether an add lands on the own lane or a spread one, it counts once.
func TestWindow_spreadOut_whileAdding(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	w, err := New[int64](3, time.Second, WithClock(m))
	require.NoError(t, err)
	const writers, adds = 4, 2000
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range adds {
				w.AddCurrent(1)
				if i == adds/2 {
					w.spreadOut()
				}
			}
		}()
	}
	wg.Wait()
	require.NotNil(t, w.spread.Load())
	assert.Equal(t, Bucket[int64]{Sum: writers * adds, Count: writers * adds}, w.Lifetime())
	m.Add(time.Second)
	done, cur := w.Parts()
	assert.Equal(t, Bucket[int64]{Sum: writers * adds, Count: writers * adds}, done)
	assert.Equal(t, Bucket[int64]{}, cur)
}

func TestWindow_spreadLanesNeverAllocate(t *testing.T) {
	w, err := New[int64](40, 250*time.Millisecond, WithClockEvery(16))
	require.NoError(t, err)
	w.spreadOut()
	allocs := testing.AllocsPerRun(1000, func() {
		w.Add(1)
		w.AddCurrent(0)
		w.Totals()
	})
	assert.Equal(t, 0.0, allocs)
}
