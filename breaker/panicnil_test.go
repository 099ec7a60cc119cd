package breaker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/panicnil"
)

// Issue 11: with GODEBUG panicnil=1, panic(nil) in req was taken for
// runtime.Goexit: recorded, then swallowed, and Do returned nil.
func TestBreaker_Do_panicNilWithPanicnil1(t *testing.T) {
	if !panicnil.InChild(t, "TestBreaker_Do_panicNilWithPanicnil1") {
		return
	}
	b, _ := newBreaker(t)
	panicked, v := panicnil.Panics(func() { _ = b.Do(func() error { panic(nil) }) })
	assert.True(t, panicked, "panic(nil) is raised again")
	assert.Nil(t, v)
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "recorded once, as a failure")

	panicked, _ = panicnil.Panics(func() {
		_, _ = breaker.Call(context.Background(), b, func(context.Context) (int, error) { panic(nil) })
	})
	assert.True(t, panicked, "Call raises panic(nil) again too")
	accepts, total = breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(2), total)

	assert.NoError(t, b.Do(func() error { return nil }), "the breaker still works")
}
