package httpbreaker_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/internal/panicnil"
)

type nilPanickingTransport struct{}

func (nilPanickingTransport) RoundTrip(*http.Request) (*http.Response, error) { panic(nil) }

// Issue 11: with GODEBUG panicnil=1, panic(nil) in the wrapped
// RoundTripper or handler was swallowed: RoundTrip returned nil, nil, and
// the Handler went on as if the handler had returned.
func TestPanicNilWithPanicnil1(t *testing.T) {
	if !panicnil.InChild(t, "TestPanicNilWithPanicnil1") {
		return
	}
	reg := newRegistry()
	tr := httpbreaker.MustNewTransport(nilPanickingTransport{}, httpbreaker.WithBreakers(reg.Get))
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	require.NoError(t, err)
	assert.True(t, panicked(func() { _, _ = tr.RoundTrip(req) }), "the Transport raises panic(nil) again")
	accepts, total := reg.Totals("127.0.0.1:1")
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "recorded as a failure")

	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(nil) }),
		httpbreaker.WithBreakers(reg.Get))
	r, err := http.NewRequest(http.MethodGet, "/", strings.NewReader(""))
	require.NoError(t, err)
	assert.True(t, panicked(func() { h.ServeHTTP(discard{}, r) }), "the Handler raises panic(nil) again")
	accepts, total = reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "recorded as a failure")
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}

// panicked reports whether f panicked, panic(nil) included.
func panicked(f func()) bool {
	p, _ := panicnil.Panics(f)
	return p
}
