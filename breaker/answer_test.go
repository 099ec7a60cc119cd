package breaker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// answerer is how an integration finds Answered on a breaker's promise.
type answerer interface{ Answered() srebreaker.Promise }

// answer marks p's call answered and returns the promise of its outcome.
func answer(t *testing.T, p srebreaker.Promise) srebreaker.Promise {
	t.Helper()
	a, ok := p.(answerer)
	require.True(t, ok, "a breaker's promise has Answered")
	return a.Answered()
}

// stats returns b's snapshot.
func stats(t *testing.T, b breaker.Breaker) breaker.Stats {
	t.Helper()
	s := b.Stats()
	return s
}

// learn has b learn that its calls come back within a bucket: 60 calls,
// 20 ms apart.
func learn(t *testing.T, b breaker.Breaker, mock *clock.Mock) {
	t.Helper()
	for range 60 {
		succeed(t, b, 1)
		mock.Add(20 * time.Millisecond)
	}
}

// A call that answered is no longer out: however long its outcome takes
// (a watch open for minutes), the breaker does not count it against the
// dependency, and counts the outcome when it comes, as it says. A call
// that did not answer is out, and counts as a failure once out for much
// longer than the dependency's calls take.
func TestPromise_Answered_outcomeCountsWhenItComes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answered bool
		outcome  func(p srebreaker.Promise)
		// successes and failures after the outcome, beyond learn's
		successes, failures int64
	}{
		{"accepted", true, func(p srebreaker.Promise) { p.Accept() }, 1, 0},
		{"rejected", true, func(p srebreaker.Promise) { p.Reject("RESOURCE_EXHAUSTED") }, 0, 1},
		{"ignored", true, srebreaker.Ignore, 0, 0},
		{"not answered, accepted", false, func(p srebreaker.Promise) { p.Accept() }, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, mock := newBreaker(t)
			learn(t, b, mock)
			before := stats(t, b)
			p, err := b.Allow()
			require.NoError(t, err)
			mock.Add(10 * time.Millisecond)
			if tc.answered {
				p = answer(t, p)
			}
			for range 30 { // 3 minutes, more than the breaker follows a call out
				mock.Add(6 * time.Second)
				succeed(t, b, 1)
			}
			st := stats(t, b)
			if tc.answered {
				assert.Equal(t, before.TotalFailures, st.TotalFailures, "out while open: %v", st.Reasons)
			} else {
				require.Equal(t, before.TotalFailures+1, st.TotalFailures, "no answer: out")
				assert.Contains(t, st.Reasons[0].Text, "no answer within")
			}
			tc.outcome(p)
			st = stats(t, b)
			assert.Equal(t, before.TotalSuccesses+30+tc.successes, st.TotalSuccesses)
			assert.Equal(t, before.TotalFailures+tc.failures, st.TotalFailures)
			if tc.answered && tc.failures > 0 {
				assert.Equal(t, "RESOURCE_EXHAUSTED", st.Reasons[0].Text)
			}
		})
	}
}

// With WithSlowCall, the answer is what is timed: a call that answers in
// time and then lasts counts as its outcome says; one still out past the
// threshold counts as a failure then, and its answer and its outcome,
// which say nothing new about the moment it was made, count no more.
func TestPromise_Answered_slowCallTimesTheAnswer(t *testing.T) {
	accept := func(p srebreaker.Promise) { p.Accept() }
	reject := func(p srebreaker.Promise) { p.Reject("DATA_LOSS") }
	for _, tc := range []struct {
		name     string
		answerIn time.Duration
		outcome  func(p srebreaker.Promise)
		want     [2]int64 // successes, failures
		reason   string
	}{
		{"in time, success", 100 * time.Millisecond, accept, [2]int64{1, 0}, ""},
		{"in time, failure", 100 * time.Millisecond, reject, [2]int64{0, 1}, "DATA_LOSS"},
		{"in time, ignored", 100 * time.Millisecond, srebreaker.Ignore, [2]int64{0, 0}, ""},
		{"late, success", 500 * time.Millisecond, accept, [2]int64{0, 1}, "no answer within 300ms"},
		{"late, failure", 500 * time.Millisecond, reject, [2]int64{0, 1}, "no answer within 300ms"},
		{"late, ignored", 500 * time.Millisecond, srebreaker.Ignore, [2]int64{0, 1}, "no answer within 300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, mock := newBreaker(t, breaker.WithSlowCall(300*time.Millisecond))
			p, err := b.Allow()
			require.NoError(t, err)
			mock.Add(tc.answerIn)
			p = answer(t, p)
			mock.Add(5 * time.Minute)
			tc.outcome(p)
			st := stats(t, b)
			assert.Equal(t, tc.want, [2]int64{st.TotalSuccesses, st.TotalFailures}, "reasons: %v", st.Reasons)
			if tc.reason != "" {
				require.NotEmpty(t, st.Reasons)
				assert.Equal(t, tc.reason, st.Reasons[0].Text)
			}
		})
	}
}

// While the dependency hangs, the calls out count as failures in the live
// bucket; a call that answered is not out.
func TestPromise_Answered_notOutWhileHanging(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithSlowCall(200*time.Millisecond))
	succeed(t, b, 100)
	for range 10 {
		_, err := b.Allow() // never comes back
		require.NoError(t, err)
	}
	succeed(t, b, 1) // reads the clock: the calls were made by then
	mock.Add(500 * time.Millisecond)
	require.Equal(t, int64(10), stats(t, b).Failures, "the calls out are overdue: hanging")
	p, err := b.Allow()
	require.NoError(t, err)
	assert.Equal(t, int64(11), stats(t, b).Failures, "a call out while hanging counts as a failure")
	q := answer(t, p)
	assert.Equal(t, int64(10), stats(t, b).Failures, "answered: no longer out")
	q.Accept()
	st := stats(t, b)
	assert.Equal(t, [2]int64{102, 10}, [2]int64{st.Successes, st.Failures})
}

func TestPromise_Answered_allocatesNothing(t *testing.T) {
	for _, opts := range [][]breaker.Option{nil, {breaker.WithSlowCall(time.Second)}} {
		b, err := breaker.New(opts...) // the system clock: a mock's reading allocates
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(100, func() {
			p, err := b.Allow()
			if err != nil {
				return
			}
			p.(answerer).Answered().Accept()
		})
		assert.Zero(t, allocs)
	}
}

// Calls answered and recorded from many goroutines while the clock moves
// all count, once.
func TestPromise_Answered_concurrent(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithWindow(time.Minute))
	const goroutines, calls = 8, 500
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				mock.Add(10 * time.Millisecond)
			}
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				p, err := b.Allow()
				if !assert.NoError(t, err) {
					return
				}
				if (g+i)%2 == 0 {
					p = p.(answerer).Answered()
				}
				p.Accept()
			}
		}()
	}
	wg.Wait()
	close(done)
	st := stats(t, b)
	assert.Equal(t, int64(goroutines*calls), st.TotalSuccesses)
	assert.Zero(t, st.TotalFailures)
}
