package rollingwindow

import (
	"math"
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

// due tests a multiple of clockEvery by a multiplication: it agrees with
// the remainder, near 0, near 2³², and past 2³² on the low 32 bits.
func TestWindow_due_agreesWithTheRemainder(t *testing.T) {
	for _, every := range []int64{1, 2, 3, 7, 16, 100, 1000, 1<<31 + 1, 1 << 32, 1<<32 + 3} {
		if every > math.MaxInt {
			continue // past a 32-bit int
		}
		w, err := New[int64](1, time.Second, WithClockEvery(int(every)))
		require.NoError(t, err)
		e := uint64(every)
		check := func(held int64) {
			t.Helper()
			want := held <= exactAdds || uint64(uint32(held+1))%e == 0
			if got := w.due(held); got != want {
				t.Fatalf("WithClockEvery(%d): due(%d) = %v, want %v", every, held, got, want)
			}
		}
		for held := int64(0); held < 5000; held++ {
			check(held)
		}
		for held := int64(1<<32 - 3000); held < 1<<32+3000; held++ {
			check(held)
		}
		// Reads stay at most every adds apart across 2³².
		last := 1<<32 - 3*min(every, 1000)
		for held := last; held < 1<<32+3*min(every, 1000); held++ {
			if w.due(held) {
				assert.LessOrEqual(t, held-last, every, "WithClockEvery(%d): reads past held %d", every, held)
				last = held
			}
		}
	}
}

// Floating-point windows, and windows given only zeros, watch their own
// lane for contention like the others: a failed compare-and-swap adds
// nothing, and the add goes to a spread lane. Whether the goroutines
// happen to meet is up to the scheduler; the totals are exact either way.
func TestWindow_AddCurrent_floatAndZerosUnderContention(t *testing.T) {
	const writers, adds = 4, 20000
	run := func(add func()) {
		var wg sync.WaitGroup
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range adds {
					add()
				}
			}()
		}
		wg.Wait()
	}
	wf, err := New[float64](3, time.Second)
	require.NoError(t, err)
	run(func() { wf.AddCurrent(0.5) })
	assert.Equal(t, Bucket[float64]{Sum: writers * adds / 2, Count: writers * adds}, wf.Lifetime())
	t.Logf("float64 window spread: %v", wf.spread.Load() != nil)

	wz, err := New[int64](3, time.Second)
	require.NoError(t, err)
	run(func() { wz.AddCurrent(0) })
	assert.Equal(t, Bucket[int64]{Sum: 0, Count: writers * adds}, wz.Lifetime())
	t.Logf("window of zeros spread: %v", wz.spread.Load() != nil)
}
