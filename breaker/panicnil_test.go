package breaker_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// inPanicNilChild runs the test named name again in a child process with
// GODEBUG panicnil=1, where recover returns nil for panic(nil), and reports
// whether this is that child; the parent fails if the child does.
func inPanicNilChild(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv("SREBREAKER_PANICNIL_CHILD") == "1" {
		require.Nil(t, func() (v any) {
			defer func() { v = recover() }()
			panic(nil)
		}(), "GODEBUG panicnil=1 in the child")
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GODEBUG=panicnil=1", "SREBREAKER_PANICNIL_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child with GODEBUG panicnil=1:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: "+name)
	return false
}

// panics calls f and reports whether it panicked, and with what, panic(nil)
// under GODEBUG panicnil=1 included.
func panics(f func()) (panicked bool, v any) {
	panicked = true
	defer func() { v = recover() }()
	f()
	return false, nil
}

// Issue 11: with GODEBUG panicnil=1, panic(nil) in req was taken for
// runtime.Goexit: recorded, then swallowed, and Do returned nil.
func TestBreaker_Do_panicNilWithPanicnil1(t *testing.T) {
	if !inPanicNilChild(t, "TestBreaker_Do_panicNilWithPanicnil1") {
		return
	}
	b, _ := newBreaker(t)
	panicked, v := panics(func() { _ = b.Do(func() error { panic(nil) }) })
	assert.True(t, panicked, "panic(nil) is raised again")
	assert.Nil(t, v)
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "recorded once, as a failure")

	panicked, _ = panics(func() {
		_, _ = breaker.Call(context.Background(), b, func(context.Context) (int, error) { panic(nil) })
	})
	assert.True(t, panicked, "Call raises panic(nil) again too")
	accepts, total = breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(2), total)

	assert.NoError(t, b.Do(func() error { return nil }), "the breaker still works")
}
