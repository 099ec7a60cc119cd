package breaker

import (
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/rollingwindow"
)

// A level's outcomes are recorded in its rollingwindow window, Add(1) a
// success and Add(0) a failure, and reach the history when the bucket
// finishes. A breaker never called makes no window.
func TestCounts_outcomesAreRecordedInTheRollingWindow(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := MustNew(WithClock(mock)).(*googleBreaker)
	assert.Nil(t, b.counts.window.Load(), "no window before the first call")

	for i := range 5 {
		p, err := b.Allow()
		require.NoError(t, err)
		if i < 3 {
			p.Accept()
		} else {
			p.Reject("down")
		}
	}
	w := b.counts.window.Load()
	require.NotNil(t, w)
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 3, Count: 5}, w.live.Current(), "three 1s and two 0s")
	assert.Equal(t, evidence.Bucket{Successes: 3, Failures: 2}, b.counts.sum())

	mock.Add(time.Duration(b.span))
	b.advanceIfDue()
	assert.Equal(t, rollingwindow.Bucket[int64]{}, w.live.Current(), "the bucket finished")
	b.mu.Lock()
	assert.Equal(t, evidence.Bucket{Successes: 3, Failures: 2}, b.history.Summarize().Window, "handed to the history")
	b.mu.Unlock()
	assert.Equal(t, rollingwindow.Bucket[int64]{Sum: 3, Count: 5}, w.live.Lifetime())
}

// A call that comes back while a bucket's end marks its cohort overdue is
// counted once: as a failure by the mark, or as its outcome in the
// window. Goroutines report the calls of a cohort while others finish the
// bucket that finds them overdue; every call made is counted once in the
// breaker's lifetime figures.
func TestCohort_overdueRace_eachCallCountsOnce(t *testing.T) {
	for range 20 {
		mock := clock.NewMock()
		mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
		b := MustNew(WithClock(mock)).(*googleBreaker)
		made := 0
		for range 10 { // the breaker learns how long calls take: a bucket
			for range 10 {
				p, err := b.Allow()
				require.NoError(t, err)
				p.Accept()
				made++
			}
			mock.Add(time.Duration(b.span))
		}
		const calls = 4000
		promises := make([]srebreaker.Promise, calls)
		for i := range promises {
			p, err := b.Allow()
			require.NoError(t, err)
			promises[i] = p
			made++
		}
		mock.Add(10 * time.Duration(b.span)) // overdue at the next reading

		var wg sync.WaitGroup
		const reporters = 4
		for r := range reporters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := r; i < calls; i += reporters {
					if i%3 == 0 {
						promises[i].Reject("late")
					} else {
						promises[i].Accept()
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.advanceIfDue()
		}()
		wg.Wait()
		mock.Add(time.Duration(b.span))
		b.advanceIfDue()

		b.mu.Lock()
		got := b.lifetime
		b.mu.Unlock()
		require.Equal(t, int64(made), got.Successes+got.Failures, "every call counted once: %+v", got)
	}
}
