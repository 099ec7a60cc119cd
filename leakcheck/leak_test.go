package leakcheck_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/statuspage"
)

// TestMain fails the run if a goroutine outlives the tests, whichever test
// started it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestBreaker_systemClock_leavesNoGoroutine drives breakers through what a
// program does with them: calls that fail until the breaker sheds, a
// registry, listeners, a logger, stats and an HTTP client on loopback.
// Nothing is closed or stopped afterwards, because nothing needs to be.
func TestBreaker_systemClock_leavesNoGoroutine(t *testing.T) {
	var events atomic.Int64
	listener := func(breaker.Event) { events.Add(1) }
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	errDown := errors.New("down")

	b, err := breaker.New(breaker.WithName("payments"),
		breaker.WithListener(listener), breaker.WithLogger(logger))
	require.NoError(t, err)
	require.True(t, failUntilShed(b, errDown), "a breaker whose calls all fail never shed one")
	if promise, err := b.Allow(); err == nil {
		promise.Reject("down")
	}
	stats := b.Stats()
	assert.Positive(t, stats.TotalFailures)
	assert.Positive(t, stats.DropProbability, "a shedding breaker's drop probability")

	registry := breaker.MustNewRegistry(breaker.WithListener(listener), breaker.WithLogger(logger))
	require.True(t, failUntilShed(registry.Get("search"), errDown))
	assert.NoError(t, registry.Get("users").Do(func() error { return nil }))

	// A server on 127.0.0.1 that answers 503 until the transport sheds.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	base := &http.Transport{}
	client := &http.Client{Transport: httpbreaker.MustNewTransport(base, httpbreaker.WithRegistry(registry))}
	shed := false
	for range 1000 {
		resp, err := client.Get(srv.URL)
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			shed = true
			break
		}
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	require.True(t, shed, "a transport whose server answers 503 never shed a request")
	// The program's own connections, which a program closes too.
	client.CloseIdleConnections()
	srv.Close()

	goleak.VerifyNone(t)
}

// failUntilShed calls b with failing requests until it sheds one, at most
// 1000 times, and reports whether it did.
func failUntilShed(b breaker.Breaker, errDown error) bool {
	for range 1000 {
		if err := b.Do(func() error { return errDown }); errors.Is(err, breaker.ErrServiceUnavailable) {
			return true
		}
	}
	return false
}

// TestStatuspage_leavesNoGoroutine serves the status page and its JSON, on
// the system clock, from a server on 127.0.0.1: the page samples its
// charts when asked, and nothing runs between requests.
func TestStatuspage_leavesNoGoroutine(t *testing.T) {
	registry := breaker.MustNewRegistry()
	require.True(t, failUntilShed(registry.Get("payments"), errors.New("down")))
	srv := httptest.NewServer(statuspage.MustNew(registry))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	for _, target := range []string{"/", "/?format=json", "/?format=json"} {
		resp, err := client.Get(srv.URL + target)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	client.CloseIdleConnections()
	srv.Close()

	goleak.VerifyNone(t)
}
