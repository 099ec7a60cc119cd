package breaker_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

func TestCall_success(t *testing.T) {
	b, _ := newBreaker(t)
	v, err := breaker.Call(context.Background(), b, func(context.Context) (int, error) { return 42, nil })
	assert.NoError(t, err)
	assert.Equal(t, 42, v)
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(1), accepts)
	assert.Equal(t, int64(1), total)
}

func TestCall_errorPassesThrough(t *testing.T) {
	b, _ := newBreaker(t)
	v, err := breaker.Call(context.Background(), b, func(context.Context) (string, error) { return "partial", errBoom })
	assert.Same(t, errBoom, err, "the request's error is returned untouched")
	assert.Equal(t, "partial", v, "the request's value is returned even with an error")
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

func TestCall_passesCtxToReq(t *testing.T) {
	b, _ := newBreaker(t)
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	v, err := breaker.Call(ctx, b, func(ctx context.Context) (any, error) { return ctx.Value(key{}), nil })
	require.NoError(t, err)
	assert.Equal(t, "v", v)
}

func TestCall_droppedWithoutFallback(t *testing.T) {
	b, _ := newBreaker(t)
	fail(t, b, 100, "down")
	drops := 0
	for range 50 {
		v, err := breaker.Call(context.Background(), b, func(context.Context) (int, error) { return 7, errBoom })
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			drops++
			assert.Equal(t, 0, v, "a dropped call returns the zero value")
		}
	}
	assert.Greater(t, drops, 25)
}

func TestCall_ctxAlreadyDone(t *testing.T) {
	b, _ := newBreaker(t)
	fail(t, b, 100, "down") // drops are likely: the ctx check must come first
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, totalBefore := breaker.Totals(b)
	for range 20 {
		_, err := breaker.Call(ctx, b,
			func(context.Context) (int, error) { t.Error("req ran"); return 0, nil })
		assert.Same(t, context.Canceled, err)
	}
	_, total := breaker.Totals(b)
	assert.Equal(t, totalBefore, total, "nothing recorded")
}

func TestCall_callerCancels(t *testing.T) {
	b, _ := newBreaker(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := breaker.Call(ctx, b, func(ctx context.Context) (int, error) {
		cancel()
		<-ctx.Done()
		return 0, ctx.Err()
	})
	assert.ErrorIs(t, err, context.Canceled)
	_, total := breaker.Totals(b)
	assert.Equal(t, int64(0), total, "the caller gave up: recorded as neither")
}

func TestCall_canceledWithoutCallerCancel(t *testing.T) {
	// A dependency that answers "canceled" on its own is to blame.
	b, _ := newBreaker(t)
	_, err := breaker.Call(context.Background(), b, func(context.Context) (int, error) { return 0, context.Canceled })
	assert.ErrorIs(t, err, context.Canceled)
	_, total := breaker.Totals(b)
	assert.Equal(t, int64(1), total)
}

func TestCall_deadlineIsFailure(t *testing.T) {
	b, _ := newBreaker(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	// The deadline passes while req runs: simulate with a ctx that expires
	// inside req, without waiting.
	_, err := breaker.Call(context.Background(), b, func(context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "a deadline is a failure")
}

func TestCall_panicIsFailureAndRaised(t *testing.T) {
	b, _ := newBreaker(t)
	assert.PanicsWithValue(t, "kaboom", func() {
		_, _ = breaker.Call(context.Background(), b, func(context.Context) (int, error) { panic("kaboom") })
	})
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

func TestCall_goexitIsFailure(t *testing.T) {
	b, _ := newBreaker(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = breaker.Call(context.Background(), b, func(context.Context) (int, error) {
			runtime.Goexit()
			return 0, nil
		})
	}()
	wg.Wait()
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

// plainBreaker hands out promises without Ignore, as a Breaker written
// against go-zero's interface would.
type plainBreaker struct {
	breaker.Breaker
	accepts, rejects int
}

type plainPromise struct{ b *plainBreaker }

func (p plainPromise) Accept()       { p.b.accepts++ }
func (p plainPromise) Reject(string) { p.b.rejects++ }

func (b *plainBreaker) AllowCtx(context.Context) (srebreaker.Promise, error) {
	return plainPromise{b}, nil
}

func TestCall_anyBreaker(t *testing.T) {
	b := &plainBreaker{Breaker: breaker.Nop()}
	_, _ = breaker.Call(context.Background(), b, func(context.Context) (int, error) { return 0, nil })
	_, _ = breaker.Call(context.Background(), b, func(context.Context) (int, error) { return 0, errBoom })
	ctx, cancel := context.WithCancel(context.Background())
	_, _ = breaker.Call(ctx, b, func(context.Context) (int, error) { cancel(); return 0, context.Canceled })
	assert.Equal(t, 1, b.accepts)
	assert.Equal(t, 1, b.rejects, "the canceled call is neither accepted nor rejected")
}

func TestCall_concurrent(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithK(1000)) // never drops
	const goroutines, calls = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				_, _ = breaker.Call(context.Background(), b, func(context.Context) (int, error) {
					if (g+i)%4 == 0 {
						return 0, errBoom
					}
					return i, nil
				})
			}
		}()
	}
	wg.Wait()
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(goroutines*calls), total)
	assert.Equal(t, int64(goroutines*calls*3/4), accepts)
}
