package rollingwindow

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 11: more than 2³² values in one bucket made the lifetime count go
// down when the bucket turned, in a layout that packed the current bucket's
// count in 32 bits. The current bucket now counts in 64 bits: this test
// fills one past 2³² (a breaker's successes and failures, as the window
// stores them after that many adds) and checks that nothing goes down.
func TestWindow_Lifetime_moreThan2To32InOneBucket(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	w, err := New[int64](4, time.Second, WithClock(m))
	require.NoError(t, err)
	const successes, failures = 1<<32 + 7, 1<<32 + 3
	w.own.sum.Store(successes) // what successes adds of 1 leave
	w.own.rest.Store(failures) // and failures adds of 0
	w.AddCurrent(1)
	w.AddCurrent(0)
	want := Bucket[int64]{Sum: successes + 1, Count: successes + failures + 2}
	require.Equal(t, want, w.Lifetime())
	sum, count := w.Totals()
	assert.Equal(t, want.Sum, sum)
	assert.Equal(t, want.Count, count)

	m.Add(time.Second) // the bucket turns
	assert.Equal(t, want, w.Lifetime(), "the lifetime totals never go down")
	sum, count = w.Totals()
	assert.Equal(t, want.Sum, sum, "the finished bucket is still in the window")
	assert.Equal(t, want.Count, count)

	w.AddCurrent(1)
	m.Add(10 * time.Second) // the whole window expires
	want.Sum++
	want.Count++
	assert.Equal(t, want, w.Lifetime())
	sum, count = w.Totals()
	assert.Equal(t, int64(0), sum)
	assert.Equal(t, int64(0), count)
}
