package breaker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// noFallback is a fallback that returns the drop's error.
func noFallback(err error) error { return err }

// Regression: a nil req panicked with a nil dereference inside the call
// and was recorded as a failure of the dependency, its reason on the
// status page and in drop errors.
func TestBreaker_Do_nilArgumentsPanicAndRecordNothing(t *testing.T) {
	ctx := context.Background()
	ok := func() error { return nil }
	forms := []struct {
		name string // the method, as the panic names it
		arg  string // the nil argument
		call func(b breaker.Breaker)
	}{
		{"Do", "req", func(b breaker.Breaker) { _ = b.Do(nil) }},
		{"DoCtx", "req", func(b breaker.Breaker) { _ = b.DoCtx(ctx, nil) }},
		{"DoWithAcceptable", "req", func(b breaker.Breaker) { _ = b.DoWithAcceptable(nil, nil) }},
		{"DoWithAcceptableCtx", "req", func(b breaker.Breaker) { _ = b.DoWithAcceptableCtx(ctx, nil, nil) }},
		{"DoWithFallback", "req", func(b breaker.Breaker) { _ = b.DoWithFallback(nil, noFallback) }},
		{"DoWithFallback", "fallback", func(b breaker.Breaker) { _ = b.DoWithFallback(ok, nil) }},
		{"DoWithFallbackCtx", "req", func(b breaker.Breaker) { _ = b.DoWithFallbackCtx(ctx, nil, noFallback) }},
		{"DoWithFallbackCtx", "fallback", func(b breaker.Breaker) { _ = b.DoWithFallbackCtx(ctx, ok, nil) }},
		{"DoWithFallbackAcceptable", "req", func(b breaker.Breaker) {
			_ = b.DoWithFallbackAcceptable(nil, noFallback, nil)
		}},
		{"DoWithFallbackAcceptable", "fallback", func(b breaker.Breaker) {
			_ = b.DoWithFallbackAcceptable(ok, nil, nil)
		}},
		{"DoWithFallbackAcceptableCtx", "req", func(b breaker.Breaker) {
			_ = b.DoWithFallbackAcceptableCtx(ctx, nil, noFallback, nil)
		}},
		{"DoWithFallbackAcceptableCtx", "fallback", func(b breaker.Breaker) {
			_ = b.DoWithFallbackAcceptableCtx(ctx, ok, nil, nil)
		}},
		{"Call", "req", func(b breaker.Breaker) {
			_, _ = breaker.Call[int](ctx, b, nil)
		}},
	}
	for _, tc := range forms {
		t.Run(tc.name+"/"+tc.arg, func(t *testing.T) {
			want := "breaker: " + tc.name + " called with a nil " + tc.arg
			for _, b := range []breaker.Breaker{breaker.MustNew(breaker.WithName("db")), breaker.Nop()} {
				assert.PanicsWithValue(t, want, func() { tc.call(b) }, b.Name())
				s := b.Stats()
				assert.Zero(t, s.TotalSuccesses+s.TotalFailures+s.TotalDrops, "nothing recorded")
				assert.Empty(t, s.Reasons, "no reason blames the dependency")
			}
		})
	}
	t.Run("Call/breaker", func(t *testing.T) {
		assert.PanicsWithValue(t, "breaker: Call called with a nil breaker", func() {
			_, _ = breaker.Call(ctx, nil, func(context.Context) (int, error) { return 1, nil })
		})
	})
	b := breaker.MustNew()
	require.NoError(t, b.Do(ok), "the breaker works after the misuse")
	assert.Equal(t, int64(1), b.Stats().TotalSuccesses)
}
