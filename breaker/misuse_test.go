package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
)

// noFallback is a fallback that returns the drop's error.
func noFallback(err error) error { return err }

// Regression: a nil req panicked with a nil dereference inside the call
// and was recorded as a failure of the dependency, its reason on the
// status page and in drop errors. A nil fallback or acceptable is no
// misuse (TestBreaker_DoWithFallback_nilFallbackIsNone).
func TestBreaker_Do_nilReqPanicsAndRecordsNothing(t *testing.T) {
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
		{"DoWithFallbackCtx", "req", func(b breaker.Breaker) { _ = b.DoWithFallbackCtx(ctx, nil, noFallback) }},
		{"DoWithFallbackAcceptable", "req", func(b breaker.Breaker) {
			_ = b.DoWithFallbackAcceptable(nil, noFallback, nil)
		}},
		{"DoWithFallbackAcceptableCtx", "req", func(b breaker.Breaker) {
			_ = b.DoWithFallbackAcceptableCtx(ctx, nil, noFallback, nil)
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

// Regression (issue 43): a nil fallback panicked ("called with a nil
// fallback"), where go-zero's code passes it to mean none: a dropped call
// then returns the drop's error, and an admitted one runs req, on every
// form, the Nop breaker's too.
func TestBreaker_DoWithFallback_nilFallbackIsNone(t *testing.T) {
	ctx := context.Background()
	errReq := errors.New("from req")
	req := func() error { return errReq }
	forms := []struct {
		name string
		call func(b breaker.Breaker) error
	}{
		{"DoWithFallback", func(b breaker.Breaker) error { return b.DoWithFallback(req, nil) }},
		{"DoWithFallbackCtx", func(b breaker.Breaker) error { return b.DoWithFallbackCtx(ctx, req, nil) }},
		{"DoWithFallbackAcceptable", func(b breaker.Breaker) error {
			return b.DoWithFallbackAcceptable(req, nil, nil)
		}},
		{"DoWithFallbackAcceptableCtx", func(b breaker.Breaker) error {
			return b.DoWithFallbackAcceptableCtx(ctx, req, nil, nil)
		}},
	}
	for _, tc := range forms {
		t.Run(tc.name, func(t *testing.T) {
			b := breaker.MustNew(breaker.WithName("db"))
			var err error
			require.NotPanics(t, func() { err = tc.call(b) }, "admitted")
			assert.ErrorIs(t, err, errReq, "an admitted call returns req's error")
			assert.Equal(t, int64(1), b.Stats().TotalFailures, "and is recorded")

			require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Minute}))
			require.NotPanics(t, func() { err = tc.call(b) }, "dropped")
			assert.ErrorIs(t, err, breaker.ErrServiceUnavailable, "a dropped call returns the drop's error")

			require.NotPanics(t, func() { err = tc.call(breaker.Nop()) }, "Nop")
			assert.ErrorIs(t, err, errReq, "Nop runs req")
		})
	}
}
