package rollingwindow_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

// counts returns the count of each bucket of w, oldest first.
func counts(w *rollingwindow.RollingWindow[int64]) []int64 {
	var out []int64
	w.Reduce(func(b rollingwindow.Bucket[int64]) { out = append(out, b.Count) })
	return out
}

// With up to exactAdds (32) values a bucket, every add reads the clock,
// the add after a full bucket too: light traffic lands where it would
// without WithClockEvery, even when nothing else moves the window.
func TestWindow_Add_clockEveryPlacesLightTrafficExactly(t *testing.T) {
	for _, perBucket := range []int{1, 16, 31, 32} {
		t.Run(fmt.Sprint(perBucket), func(t *testing.T) {
			m := newMock()
			exact, err := rollingwindow.New[int64](4, interval, rollingwindow.WithClock(m))
			require.NoError(t, err)
			every, err := rollingwindow.New[int64](4, interval, rollingwindow.WithClock(m), rollingwindow.WithClockEvery(16))
			require.NoError(t, err)
			for b := range 4 {
				if b > 0 {
					m.Add(interval)
				}
				for range perBucket {
					exact.Add(int64(b))
					every.Add(int64(b))
				}
			}
			n := int64(perBucket)
			assert.Equal(t, []int64{n, n, n, n}, counts(every), "each bucket holds its own adds")
			assert.Equal(t, sums(exact), sums(every))
			assert.Equal(t, exact.Lifetime(), every.Lifetime())
		})
	}
}

// Past a bucket's first 32 values, an add reads the clock once in n: at
// most n−1 adds that came after the bucket's end are counted in it, and
// n−1 is reached.
func TestWindow_Add_clockEveryKeepsAtMostNMinus1Late(t *testing.T) {
	for _, n := range []int{2, 5, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			m := newMock()
			mostLate := int64(-1)
			for busy := 33; busy < 33+2*n; busy++ {
				w, err := rollingwindow.New[int64](4, interval, rollingwindow.WithClock(m), rollingwindow.WithClockEvery(n))
				require.NoError(t, err)
				for range busy {
					w.Add(1)
				}
				m.Add(interval)
				after := int64(2 * n)
				for range after {
					w.Add(1)
				}
				got := counts(w)
				late := got[2] - int64(busy)
				assert.Equal(t, []int64{0, 0, int64(busy) + late, after - late}, got)
				assert.GreaterOrEqual(t, late, int64(0))
				assert.LessOrEqual(t, late, int64(n-1), "a bucket of %d values keeps at most n−1 late ones", busy)
				mostLate = max(mostLate, late)
			}
			assert.Equal(t, int64(n-1), mostLate, "some bucket keeps n−1 late values")
		})
	}
}

// WithClockEvery(1) reads the clock on every add, as the default does.
func TestWindow_Add_clockEvery1IsTheDefault(t *testing.T) {
	m := newMock()
	exact, err := rollingwindow.New[int64](4, interval, rollingwindow.WithClock(m))
	require.NoError(t, err)
	every, err := rollingwindow.New[int64](4, interval, rollingwindow.WithClock(m), rollingwindow.WithClockEvery(1))
	require.NoError(t, err)
	for range 12 {
		for i := range 50 { // busy buckets: more than exactAdds
			exact.Add(int64(i % 3))
			every.Add(int64(i % 3))
		}
		m.Add(interval / 3)
	}
	assert.Equal(t, counts(exact), counts(every))
	assert.Equal(t, sums(exact), sums(every))
	assert.Equal(t, exact.Lifetime(), every.Lifetime())
}

func TestWindow_Current_readsWithoutMoving(t *testing.T) {
	w, m := newWindow(t, 3)
	w.Add(1)
	m.Add(interval)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 1, Count: 1}, w.Current(), "the clock moved, the window did not")
	w.AddCurrent(2)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 3, Count: 2}, w.Current(), "AddCurrent adds to the bucket Current shows")

	m.Add(interval)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 3, Count: 2}, w.Current(), "reading Current does not move the window")
	sum, count := w.Totals() // moves the window
	assert.Equal(t, int64(3), sum)
	assert.Equal(t, int64(2), count)
	assert.Equal(t, rollingwindow.Bucket[int64]{}, w.Current(), "the window moved to the clock's bucket")
	assert.Equal(t, []int64{3, 0, 0}, sums(w))
}
