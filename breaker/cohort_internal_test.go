package breaker

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// cohorts returns how many cohorts the stripe s follows, the live one
// included.
func (s *stripe) cohorts() int {
	n := 0
	for c := s.cohort.Load(); c != nil; c = c.older.Load() {
		n++
	}
	return n
}

// Promises that are never reported (a caller's bug) cost a bounded amount
// of memory: their cohorts are followed for maxSlowCall at most, then
// forgotten, even under the plain formula, which never takes a call out
// for a failure.
func TestStripe_take_leakedPromisesAreForgotten(t *testing.T) {
	for _, plain := range []bool{false, true} {
		opts := []Option{}
		if plain {
			opts = append(opts, WithPlainFormula())
		}
		mock := clock.NewMock()
		mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
		// A bucket of 1 s, so that maxSlowCall is 120 of them.
		b := MustNew(append(opts, WithClock(mock), WithWindow(20*time.Second))...).(*googleBreaker)
		for range 3 * track(b.span) {
			mock.Add(time.Duration(b.span))
			_, err := b.Allow() // never reported; reads the clock: a bucket finishes
			require.NoError(t, err)
		}
		assert.LessOrEqual(t, b.counts.own.cohorts(), int(track(b.span))+2, "plain %v", plain)
	}
}

// The first call counts on a cohort made for it; a bucket without calls
// keeps its live cohort, which takes the next bucket's number.
func TestStripe_take_rotatesOnlyACohortWithCalls(t *testing.T) {
	b := MustNew().(*googleBreaker)
	s := &b.counts.own
	assert.Nil(t, s.cohort.Load(), "no cohort before the first call")
	c := s.admitted()
	require.Same(t, c, s.cohort.Load())
	promise{c}.Accept()

	b.mu.Lock()
	got := b.counts.take(1, &b.hang)
	b.mu.Unlock()
	assert.Equal(t, int64(1), got.Successes, "the window's outcome")
	fresh := s.cohort.Load()
	assert.NotSame(t, c, fresh, "a cohort with calls gives way")
	assert.Equal(t, cohortRetired, c.state.Load(), "all its calls came back")
	assert.Equal(t, 1, s.cohorts(), "and it left the list")

	b.mu.Lock()
	s.take(2, &b.hang)
	b.mu.Unlock()
	assert.Same(t, fresh, s.cohort.Load(), "an empty cohort stays")
	assert.Equal(t, int64(2), fresh.bucket.Load(), "with the new bucket's number")
}

// An outcome on a retired cohort (a call admitted as its cohort retired)
// counts in the live bucket: nothing is lost.
func TestCohort_markSuccess_retiredCountsInTheLiveBucket(t *testing.T) {
	b := MustNew().(*googleBreaker)
	s := &b.counts.own
	c := s.admitted()
	c.state.Store(cohortRetired)
	promise{c}.Accept()
	assert.Equal(t, int64(1), b.counts.sum().Successes)
}

// A breaker whose calls come back makes its cohorts of a few spare ones:
// a bucket end allocates no cohort once it has some.
func TestHangWatch_reuse_bucketEndsMakeNoNewCohort(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := MustNew(WithClock(mock)).(*googleBreaker)
	seen := map[*cohort]bool{}
	for i := range 300 {
		for range 3 {
			p, err := b.Allow()
			require.NoError(t, err)
			p.Accept()
		}
		if i >= 100 {
			seen[b.counts.own.cohort.Load()] = true
		}
		mock.Add(time.Duration(b.span))
	}
	assert.LessOrEqual(t, len(seen), 3, "cohorts the last 200 buckets counted on")
}

// An outcome that comes back as its cohort becomes overdue is counted
// once: in the window when it lands before the mark, by the take, as a
// failure, when it lands after.
func TestCohort_markOverdue_anOutcomeMeanwhileCountsOnce(t *testing.T) {
	b := MustNew().(*googleBreaker)
	s := &b.counts.own
	c := s.admitted()
	s.admitted()
	s.admitted()
	promise{c}.Accept() // before the mark: the window's

	assert.Equal(t, int64(2), c.markOverdue(3), "the two calls out count as failures")
	promise{c}.Accept() // after it: counted already
	promise{c}.Reject("late")
	assert.Equal(t, evidence.Bucket{Successes: 1}, b.counts.sum())
	assert.Equal(t, cohortOverdue, c.state.Load())
}
