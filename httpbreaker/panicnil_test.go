package httpbreaker_test

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/httpbreaker"
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

// panics calls f and reports whether it panicked, panic(nil) under GODEBUG
// panicnil=1 included.
func panics(f func()) (panicked bool) {
	panicked = true
	defer func() { _ = recover() }()
	f()
	return false
}

type nilPanickingTransport struct{}

func (nilPanickingTransport) RoundTrip(*http.Request) (*http.Response, error) { panic(nil) }

// Issue 11: with GODEBUG panicnil=1, panic(nil) in the wrapped
// RoundTripper or handler was swallowed: RoundTrip returned nil, nil, and
// the Handler went on as if the handler had returned.
func TestPanicNilWithPanicnil1(t *testing.T) {
	if !inPanicNilChild(t, "TestPanicNilWithPanicnil1") {
		return
	}
	reg := newRegistry()
	tr := httpbreaker.MustNewTransport(nilPanickingTransport{}, httpbreaker.WithBreakers(reg.Get))
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	require.NoError(t, err)
	assert.True(t, panics(func() { _, _ = tr.RoundTrip(req) }), "the Transport raises panic(nil) again")
	accepts, total := totals(reg, "127.0.0.1:1")
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "recorded as a failure")

	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(nil) }),
		httpbreaker.WithBreakers(reg.Get))
	r, err := http.NewRequest(http.MethodGet, "/", strings.NewReader(""))
	require.NoError(t, err)
	assert.True(t, panics(func() { h.ServeHTTP(discard{}, r) }), "the Handler raises panic(nil) again")
	accepts, total = totals(reg, httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "recorded as a failure")
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}
