package breaker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/panicnil"
)

// panickyError is an error whose Error method panics.
type panickyError struct{}

func (panickyError) Error() string { panic("Error panicked") }

// TestBreaker_Do_panicIsRecordedOnceOnEveryPath panics in req on each way
// a Do method records a call (Do's own, the other methods without a
// context or an acceptable, those with one, and at a level): each panic is
// raised again as itself and recorded once, as a failure.
func TestBreaker_Do_panicIsRecordedOnceOnEveryPath(t *testing.T) {
	type custom struct{ code int }
	boom := func() error { panic(custom{7}) }
	ctx := criticality.With(context.Background(), criticality.Sheddable)
	for _, tc := range []struct {
		name string
		do   func(b breaker.Breaker) error
	}{
		{"Do", func(b breaker.Breaker) error { return b.Do(boom) }},
		{"DoWithFallback", func(b breaker.Breaker) error { return b.DoWithFallback(boom, noFallback) }},
		{"DoWithAcceptable", func(b breaker.Breaker) error {
			return b.DoWithAcceptable(boom, func(error) bool { return true })
		}},
		{"DoCtx", func(b breaker.Breaker) error { return b.DoCtx(context.Background(), boom) }},
		{"DoCtx at a level", func(b breaker.Breaker) error { return b.DoCtx(ctx, boom) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBreaker(t)
			assert.PanicsWithValue(t, custom{7}, func() { _ = tc.do(b) })
			accepts, total := breaker.Totals(b)
			assert.Equal(t, int64(0), accepts)
			assert.Equal(t, int64(1), total, "a panic is recorded once, as a failure")
		})
	}
}

// TestBreaker_Do_panicInErrorMethod: the reason of a failed call comes
// from the error's Error method, which is user code: its panic is raised
// again and the call recorded once, as a failure.
func TestBreaker_Do_panicInErrorMethod(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(b breaker.Breaker, req func() error) error
	}{
		{"Do", breaker.Breaker.Do},
		{"DoWithFallback", func(b breaker.Breaker, req func() error) error { return b.DoWithFallback(req, noFallback) }},
		{"DoCtx", func(b breaker.Breaker, req func() error) error { return b.DoCtx(context.Background(), req) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBreaker(t)
			assert.PanicsWithValue(t, "Error panicked", func() {
				_ = tc.do(b, func() error { return panickyError{} })
			})
			accepts, total := breaker.Totals(b)
			assert.Equal(t, int64(0), accepts)
			assert.Equal(t, int64(1), total, "recorded once, as a failure")
		})
	}
}

func TestBreaker_AllowCtx_canceledContextAtALevel(t *testing.T) {
	b, _ := newBreaker(t)
	parent, cancel := context.WithCancel(context.Background())
	ctx := criticality.With(parent, criticality.Sheddable)
	cancel()
	p, err := b.AllowCtx(ctx)
	assert.Nil(t, p)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, b.DoCtx(ctx, func() error { t.Error("req ran on a done context"); return nil }),
		context.Canceled)
	_, total := breaker.Totals(b)
	assert.Equal(t, int64(0), total, "nothing recorded")
}

// TestBreaker_DoMethods_panicNilWithPanicnil1 is
// TestBreaker_Do_panicNilWithPanicnil1 for the other ways a Do method
// records a call: panic(nil) is raised again and recorded once.
func TestBreaker_DoMethods_panicNilWithPanicnil1(t *testing.T) {
	if !panicnil.InChild(t, "TestBreaker_DoMethods_panicNilWithPanicnil1") {
		return
	}
	boom := func() error { panic(nil) }
	ctx := criticality.With(context.Background(), criticality.Sheddable)
	for _, tc := range []struct {
		name string
		do   func(b breaker.Breaker) error
	}{
		{"DoWithFallback", func(b breaker.Breaker) error { return b.DoWithFallback(boom, noFallback) }},
		{"DoWithAcceptable", func(b breaker.Breaker) error {
			return b.DoWithAcceptable(boom, func(error) bool { return true })
		}},
		{"DoCtx at a level", func(b breaker.Breaker) error { return b.DoCtx(ctx, boom) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBreaker(t)
			panicked, v := panicnil.Panics(func() { _ = tc.do(b) })
			assert.True(t, panicked, "panic(nil) is raised again")
			assert.Nil(t, v)
			accepts, total := breaker.Totals(b)
			assert.Equal(t, int64(0), accepts)
			assert.Equal(t, int64(1), total, "recorded once, as a failure")
		})
	}
}
