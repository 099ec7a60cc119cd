package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// rejectOverloaded records n failures through Allow and RejectOverloaded.
func rejectOverloaded(t *testing.T, b breaker.Breaker, n int) {
	t.Helper()
	for range n {
		p, err := b.Allow()
		if err == nil {
			srebreaker.RejectOverloaded(p, "overloaded")
		}
	}
}

func TestRejectOverloaded_countsEveryDrop(t *testing.T) {
	opts := []breaker.Option{breaker.WithTrustRecent(false), breaker.WithAggression(1), breaker.WithProtection(0)}
	capped, _ := newBreaker(t, opts...)
	succeed(t, capped, 20)
	fail(t, capped, 20, "down")
	whole, _ := newBreaker(t, opts...)
	succeed(t, whole, 20)
	rejectOverloaded(t, whole, 20)

	// Capped, the drops stop at 0.5·40 and the probability at
	// (60 − 30)/61. Every drop counted, it is (40 + drops − 30)/(41 +
	// drops), which the drops take towards 1.
	dropShare(capped, 2000)
	dropShare(whole, 2000)
	assert.InDelta(t, 30.0/61, dropShare(capped, 20_000), 0.02)
	assert.Greater(t, dropShare(whole, 20_000), 0.95)
}

// offerOverServed offers offered calls in each 100 ms bucket, for buckets
// buckets, to a dependency that serves served of them a bucket and turns
// the excess away, reported with reject; it returns the calls admitted
// and the successes of the last half of the buckets.
func offerOverServed(b breaker.Breaker, m interface{ Add(time.Duration) }, offered, served, buckets int,
	reject func(srebreaker.Promise)) (admitted, successes int) {
	for i := range buckets {
		room := served
		for range offered {
			p, err := b.Allow()
			if err != nil {
				continue
			}
			if i >= buckets/2 {
				admitted++
			}
			if room > 0 {
				room--
				p.Accept()
				if i >= buckets/2 {
					successes++
				}
				continue
			}
			reject(p)
		}
		m.Add(100 * time.Millisecond)
	}
	return admitted, successes
}

func TestRejectOverloaded_keepsUnderKCallsPerSuccess(t *testing.T) {
	for _, offered := range []int{200, 400, 800} { // 2×, 4× and 8× of 100
		t.Run("", func(t *testing.T) {
			b, m := newBreaker(t)
			admitted, successes := offerOverServed(b, m, offered, 100, 100,
				func(p srebreaker.Promise) { srebreaker.RejectOverloaded(p, "overloaded") })
			require.Positive(t, successes)
			perSuccess := float64(admitted) / float64(successes)
			assert.Less(t, perSuccess, breaker.DefaultK-0.05, "%d offered per 100 served: calls per success", offered)
			assert.Greater(t, perSuccess, 1.3, "%d offered per 100 served: calls per success", offered)

			// An aggression of 1 is the book's: K calls per success.
			b, m = newBreaker(t, breaker.WithAggression(1))
			admitted, successes = offerOverServed(b, m, offered, 100, 100,
				func(p srebreaker.Promise) { srebreaker.RejectOverloaded(p, "overloaded") })
			require.Positive(t, successes)
			assert.InDelta(t, breaker.DefaultK, float64(admitted)/float64(successes), 0.05,
				"%d offered per 100 served, aggression 1: calls per success", offered)

			b, m = newBreaker(t)
			admitted, successes = offerOverServed(b, m, offered, 100, 100, func(p srebreaker.Promise) { p.Reject("failed") })
			if offered >= 400 {
				assert.Greater(t, float64(admitted)/float64(successes), breaker.DefaultK+0.2,
					"%d offered per 100 served, failures not said to be overload: calls per success", offered)
			}
		})
	}
}

func TestRejectOverloaded_forgottenOnceOutOfTheWindow(t *testing.T) {
	told, m := newBreaker(t)
	rejectOverloaded(t, told, 10)
	m.Add(2 * time.Second) // the default window
	succeed(t, told, 1)    // the breaker's time moves on
	never, n := newBreaker(t)
	fail(t, never, 10, "down")
	n.Add(2 * time.Second)
	succeed(t, never, 1)
	for _, b := range []breaker.Breaker{told, never} {
		succeed(t, b, 20)
		fail(t, b, 40, "down")
	}
	assert.Equal(t, dropShare(never, 5000), dropShare(told, 5000), "same seed, same state, same draws")
}

func TestRejectOverloaded_plainFormulaAsReject(t *testing.T) {
	plain, _ := newBreaker(t, breaker.WithPlainFormula())
	told, _ := newBreaker(t, breaker.WithPlainFormula())
	succeed(t, plain, 30)
	fail(t, plain, 90, "down")
	succeed(t, told, 30)
	rejectOverloaded(t, told, 90)
	assert.Equal(t, dropShare(plain, 5000), dropShare(told, 5000), "same seed, same state, same draws")
}

func TestRejectOverloaded_afterAnswered(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithTrustRecent(false), breaker.WithAggression(1), breaker.WithProtection(0))
	succeed(t, b, 20)
	for range 20 {
		p, err := b.Allow()
		require.NoError(t, err)
		a, ok := p.(interface{ Answered() srebreaker.Promise })
		require.True(t, ok)
		srebreaker.RejectOverloaded(a.Answered(), "overloaded")
	}
	dropShare(b, 2000)
	assert.Greater(t, dropShare(b, 20_000), 0.95, "every drop counted, as with the promise itself")
	assert.Equal(t, int64(20), b.Stats().Failures)
}
