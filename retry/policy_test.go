package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/retry"
)

var errTransient = errors.New("transient")

func TestNew_invalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  retry.Option
		want string
	}{
		{"no attempts", retry.WithAttempts(0), "WithAttempts(0): attempts must be from 1 to 10"},
		{"too many attempts", retry.WithAttempts(11), "WithAttempts(11)"},
		{"zero base", retry.WithBackoff(0, time.Second), "base must be positive"},
		{"max below base", retry.WithBackoff(time.Second, time.Millisecond), "max must be at least base"},
		{"nil clock", retry.WithClock(nil), "WithClock(nil)"},
		{"nil source", retry.WithRand(nil), "WithRand(nil)"},
		{"nil retryable", retry.WithRetryable(nil), "WithRetryable(nil)"},
		{"ratio above 1", retry.WithBudget(retry.Budget{Ratio: 1.5}), "Ratio 1.5 must be a number from 0 to 1"},
		{"negative floor", retry.WithBudget(retry.Budget{Ratio: 0.1, Floor: -1}), "Floor -1 must be at least 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := retry.New(tc.opt)
			require.ErrorIs(t, err, retry.ErrInvalidOption)
			assert.Contains(t, err.Error(), tc.want)
			assert.PanicsWithValue(t, err.Error(), func() { retry.MustNew(tc.opt) })
		})
	}
}

func TestPolicy_Do_retriesUntilSuccess(t *testing.T) {
	c := newJumpClock()
	p := retry.MustNew(retry.WithClock(c), retry.WithRand(rand.NewPCG(1, 2)))
	var seen []int
	err := p.Do(context.Background(), nil, func(ctx context.Context) error {
		seen = append(seen, retry.Attempt(ctx))
		if len(seen) < 3 {
			return errTransient
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, seen)
	waits := c.waited()
	require.Len(t, waits, 2)
	assert.Less(t, waits[0], retry.DefaultBackoffBase, "full jitter below base before the first retry")
	assert.Less(t, waits[1], 2*retry.DefaultBackoffBase, "below 2·base before the second")
}

func TestPolicy_Do_givesUpAfterAttempts(t *testing.T) {
	c := newJumpClock()
	p := retry.MustNew(retry.WithClock(c), retry.WithRand(rand.NewPCG(1, 2)))
	n := 0
	err := p.Do(context.Background(), nil, func(context.Context) error { n++; return errTransient })
	assert.Same(t, errTransient, err, "the last attempt's error, untouched")
	assert.Equal(t, retry.DefaultAttempts, n)
}

func TestPolicy_Do_neverRetried(t *testing.T) {
	drop := fmt.Errorf("wrapped: %w", breaker.ErrServiceUnavailable)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"a drop", drop},
		{"a spent budget", retry.ErrBudgetSpent},
		{"a canceled call", context.Canceled},
		{"don't retry", pushback{retry: false}},
		{"don't retry, wrapped", fmt.Errorf("call: %w", pushback{d: time.Second, retry: false})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := retry.MustNew(retry.WithClock(newJumpClock()))
			n := 0
			err := p.Do(context.Background(), nil, func(context.Context) error { n++; return tc.err })
			assert.Equal(t, tc.err, err)
			assert.Equal(t, 1, n)
			assert.False(t, retry.Retryable(tc.err))
		})
	}
}

func TestPolicy_Do_retryableOption(t *testing.T) {
	p := retry.MustNew(retry.WithClock(newJumpClock()),
		retry.WithRetryable(func(err error) bool { return errors.Is(err, errTransient) }))
	n := 0
	err := p.Do(context.Background(), nil, func(context.Context) error { n++; return errors.New("permanent") })
	assert.EqualError(t, err, "permanent")
	assert.Equal(t, 1, n)
}

func TestPolicy_Do_waitsThePushback(t *testing.T) {
	c := newJumpClock()
	p := retry.MustNew(retry.WithClock(c))
	n := 0
	err := p.Do(context.Background(), nil, func(context.Context) error {
		n++
		if n == 1 {
			return pushback{d: 1500 * time.Millisecond, retry: true}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{1500 * time.Millisecond}, c.waited())
}

func TestPolicy_Do_noAttemptPastTheDeadline(t *testing.T) {
	c := newJumpClock()
	p := retry.MustNew(retry.WithClock(c), retry.WithAttempts(10), retry.WithBackoff(10*time.Millisecond, 10*time.Millisecond))
	ctx := deadlineCtx{Context: context.Background(), at: start.Add(350 * time.Millisecond)}
	var ends []time.Time
	err := p.Do(ctx, nil, func(context.Context) error {
		c.Add(100 * time.Millisecond) // each attempt takes 100 ms
		ends = append(ends, c.Now())
		return errTransient
	})
	assert.Same(t, errTransient, err)
	require.Len(t, ends, 3, "a fourth attempt could not finish by the deadline")
	for _, e := range ends {
		assert.False(t, e.After(ctx.at), "attempt ended at %v, after the deadline", e.Sub(start))
	}
}

func TestPolicy_Do_callerDeadlinePassed(t *testing.T) {
	p := retry.MustNew(retry.WithClock(newJumpClock()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	n := 0
	err := p.Do(ctx, nil, func(context.Context) error { n++; return context.DeadlineExceeded })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 1, n, "no retry once the caller's context is done")
}

// cancelingClock cancels a context when a wait begins, and never fires.
type cancelingClock struct {
	*jumpClock
	cancel context.CancelFunc
}

func (c cancelingClock) After(time.Duration) <-chan time.Time { c.cancel(); return nil }

func TestPolicy_Do_canceledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := retry.MustNew(retry.WithClock(cancelingClock{newJumpClock(), cancel}))
	n := 0
	err := p.Do(ctx, nil, func(context.Context) error { n++; return errTransient })
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, n)
}

func TestPolicy_Do_throughABreaker(t *testing.T) {
	c := newJumpClock()
	b := breaker.MustNew(breaker.WithClock(c.Mock), breaker.WithProba(proba.NewSeeded(1)))
	p := retry.MustNew(retry.WithClock(c), retry.WithRand(rand.NewPCG(1, 2)))
	n := 0
	err := p.Do(context.Background(), b, func(context.Context) error {
		n++
		if n < 2 {
			return errTransient
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	s := b.Stats()
	assert.Equal(t, int64(1), s.Successes)
	assert.Equal(t, int64(1), s.Failures)
	assert.Equal(t, int64(1), s.Retries)
}

func TestCall_typed(t *testing.T) {
	p := retry.MustNew(retry.WithClock(newJumpClock()))
	n := 0
	v, err := retry.Call(context.Background(), p, nil, func(context.Context) (string, error) {
		n++
		if n == 1 {
			return "", errTransient
		}
		return "ok", nil
	})
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
}

func TestBackoff_fullJitter(t *testing.T) {
	// The n-th retry waits uniformly in [0, min(max, base·2ⁿ⁻¹)): over many
	// calls, the waits before each retry fill their range.
	c := newJumpClock()
	base, maxWait := 10*time.Millisecond, 25*time.Millisecond
	p := retry.MustNew(retry.WithClock(c), retry.WithAttempts(4), retry.WithBackoff(base, maxWait),
		retry.WithRand(rand.NewPCG(7, 7)), retry.WithoutBudget())
	const calls = 300
	for range calls {
		_ = p.Do(context.Background(), nil, func(context.Context) error { return errTransient })
	}
	waits := c.waited()
	require.Len(t, waits, 3*calls)
	ceilings := []time.Duration{base, 2 * base, maxWait}
	for k, ceiling := range ceilings {
		var sum time.Duration
		for i := k; i < len(waits); i += 3 {
			w := waits[i]
			require.GreaterOrEqual(t, w, time.Duration(0))
			require.Less(t, w, ceiling)
			sum += w
		}
		assert.InDelta(t, float64(ceiling)/2, float64(sum/calls), float64(ceiling)/10, "mean wait before retry %d", k+1)
	}
}

// A nil function is the caller's mistake, not the dependency's: nothing is
// recorded against the breaker.
func TestCall_nilArgumentsPanicAndRecordNothing(t *testing.T) {
	b := breaker.MustNew()
	p := retry.MustNew()
	ctx := context.Background()
	assert.PanicsWithValue(t, "retry: Policy.Do called with a nil req", func() { _ = p.Do(ctx, b, nil) })
	assert.PanicsWithValue(t, "retry: Call called with a nil req", func() {
		_, _ = retry.Call[int](ctx, p, b, nil)
	})
	assert.PanicsWithValue(t, "retry: Call called with a nil Policy", func() {
		_, _ = retry.Call(ctx, nil, b, func(context.Context) (int, error) { return 1, nil })
	})
	s := b.Stats()
	assert.Zero(t, s.TotalSuccesses+s.TotalFailures+s.TotalDrops)
}
