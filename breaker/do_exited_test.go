package breaker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/panicnil"
)

// A program that sets GODEBUG panicnil=1 after it started, where Do's
// deferred function cannot tell a panic(nil) that recover stopped from
// runtime.Goexit: Do records the call once, as a failure, and returns an
// error saying so rather than nil.
func TestBreaker_Do_panicNilAfterTheStart(t *testing.T) {
	if _, v := panicnil.Panics(func() { panic(nil) }); v == nil {
		t.Skip("the program started with GODEBUG panicnil=1: Do raises panic(nil) again")
	}
	t.Setenv("GODEBUG", "panicnil=1")
	if _, v := panicnil.Panics(func() { panic(nil) }); v != nil {
		t.Skipf("this Go does not take GODEBUG panicnil=1 once started: recover returned %v", v)
	}
	b := breaker.MustNew()
	err := b.Do(func() error { panic(nil) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "call exited without returning")
	st := b.Stats()
	assert.Equal(t, int64(1), st.Failures, "recorded once, as a failure")
	assert.Zero(t, st.Successes)
}
