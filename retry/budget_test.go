package retry_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/retry"
)

// newBreaker returns a breaker on a mock clock set to start, with a 1 s
// window of 10 buckets.
func newBreaker(t *testing.T) (breaker.Breaker, *clock.Mock) {
	t.Helper()
	m := clock.NewMock()
	m.Set(start)
	return breaker.MustNew(breaker.WithClock(m), breaker.WithWindow(time.Second)), m
}

func succeed(t *testing.T, b breaker.Breaker, n int) {
	t.Helper()
	for range n {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Accept()
	}
}

// takeAll takes retries from b's budget until it refuses one, and returns
// how many it granted.
func takeAll(t *testing.T, u retry.Budget, b breaker.Breaker) int {
	t.Helper()
	for n := 0; n < 10_000; n++ {
		if err := u.Take(b); err != nil {
			require.ErrorIs(t, err, retry.ErrBudgetSpent)
			return n
		}
	}
	t.Fatal("the budget never ran out")
	return 0
}

func TestBudget_Take_ratioOfTheWindow(t *testing.T) {
	b, m := newBreaker(t)
	u := retry.DefaultBudget()
	succeed(t, b, 200)
	assert.Equal(t, 20, takeAll(t, u, b), "10% of the window's 200 calls")
	s := b.Stats()
	assert.Equal(t, int64(20), s.Retries)
	assert.Equal(t, int64(200), s.Successes+s.Failures)

	m.Add(500 * time.Millisecond)
	_ = b.Stats() // reads the clock: the calls below land in the new bucket, not the busy one before
	succeed(t, b, 100)
	assert.Equal(t, 10, takeAll(t, u, b), "300 calls in the window, 20 retries granted already")

	m.Add(900 * time.Millisecond) // the first 200 calls and their 20 retries leave the window
	s = b.Stats()
	assert.Equal(t, int64(10), s.Retries, "the second half-window's retries are still in it")
	assert.Equal(t, int64(100), s.Successes+s.Failures)
	m.Add(time.Second) // and those too
	assert.Equal(t, retry.DefaultBudgetFloor, takeAll(t, u, b), "an empty window grants the floor")
}

func TestBudget_Take_floorOnLightTraffic(t *testing.T) {
	b, _ := newBreaker(t)
	succeed(t, b, 5)
	assert.Equal(t, 3, takeAll(t, retry.Budget{Ratio: 0.1, Floor: 3}, b))
	b2, _ := newBreaker(t)
	assert.Equal(t, 0, takeAll(t, retry.Budget{}, b2), "the zero Budget grants nothing")
}

func TestBudget_Take_breakersWithoutAWindow(t *testing.T) {
	u := retry.Budget{}
	for range 100 {
		require.NoError(t, u.Take(breaker.Nop()))
	}
	assert.Zero(t, breaker.Nop().Stats().Retries)
}

func TestTakeFor(t *testing.T) {
	b, _ := newBreaker(t)
	assert.NoError(t, retry.TakeFor(context.Background(), b), "not a retry")
	assert.NoError(t, retry.TakeFor(retry.WithAttempt(context.Background(), 1), b), "a first attempt")
	ctx := retry.WithAttempt(context.Background(), 2)
	for range retry.DefaultBudgetFloor {
		require.NoError(t, retry.TakeFor(ctx, b))
	}
	assert.ErrorIs(t, retry.TakeFor(ctx, b), retry.ErrBudgetSpent, "DefaultBudget's floor, spent")
}

func TestPolicy_Do_budgetSpent(t *testing.T) {
	c := newJumpClock()
	b := breaker.MustNew(breaker.WithClock(c.Mock))
	p := retry.MustNew(retry.WithClock(c), retry.WithBudget(retry.Budget{Ratio: 0, Floor: 2}))
	attempts := 0
	for range 3 {
		_ = p.Do(context.Background(), b, func(context.Context) error { attempts++; return errTransient })
	}
	assert.Equal(t, 3+2, attempts, "three calls, and the two retries the floor grants")
}

func TestBudget_hotPathAllocs(t *testing.T) {
	b := breaker.MustNew()
	require.NoError(t, retry.DefaultBudget().Take(b))
	allocs := testing.AllocsPerRun(1000, func() {
		p, err := b.Allow()
		if err == nil {
			p.Accept()
		}
	})
	assert.Zero(t, allocs, "Allow + Accept with the budget on")
}

var sink error

// BenchmarkBudget_AllowAccept compares the call path of a breaker whose
// retry budget is in use with one that never granted a retry, side by
// side: benchstat -col /budget.
func BenchmarkBudget_AllowAccept(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "budget=off"
		if on {
			name = "budget=on"
		}
		b.Run(name, func(b *testing.B) {
			br := breaker.MustNew()
			if on {
				sink = retry.DefaultBudget().Take(br)
			}
			b.ReportAllocs()
			for range b.N {
				p, err := br.Allow()
				if err == nil {
					p.Accept()
				}
				sink = err
			}
		})
	}
}

func TestBudget_Take_concurrent(t *testing.T) {
	b, m := newBreaker(t)
	succeed(t, b, 1000)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if retry.DefaultBudget().Take(b) == nil {
					granted.Add(1)
				}
				if p, err := b.Allow(); err == nil {
					p.Accept()
				}
			}
		}()
	}
	for range 5 {
		m.Add(10 * time.Millisecond) // within the window's first bucket: nothing leaves it
	}
	wg.Wait()
	s := b.Stats()
	retries, calls := s.Retries, s.Successes+s.Failures
	assert.Equal(t, granted.Load(), retries, "every retry granted is counted once")
	assert.LessOrEqual(t, float64(retries), 0.1*float64(calls), "never more than the ratio allows")
	assert.GreaterOrEqual(t, retries, int64(100), "10% of the 1,000 calls before them, at least")
}
