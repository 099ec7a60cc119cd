package httpbreaker_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/override"
)

// An operator's override on the breaker of a host, or on a Handler's,
// decides the requests over real connections on loopback.
func TestTransport_RoundTrip_override(t *testing.T) {
	var received atomic.Int64
	servers := breaker.MustNewRegistry()
	srv := httptest.NewServer(httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
	}), httpbreaker.WithRegistry(servers)))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	clients := breaker.MustNewRegistry()
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(clients))}
	t.Cleanup(client.CloseIdleConnections)

	// Forced open on the client: the request is never sent.
	require.NoError(t, clients.Get(host).SetOverride(override.Spec{Mode: override.ShedAll,
		TTL: time.Minute, Reason: "failover", By: "alice"}))
	_, err := client.Get(srv.URL)
	require.Error(t, err)
	assert.ErrorIs(t, err, breaker.ErrServiceUnavailable, "through *url.Error")
	assert.ErrorIs(t, err, breaker.ErrForced)
	assert.Contains(t, err.Error(), `forced open by "alice"`)
	assert.Zero(t, received.Load())

	// Cleared: sent again.
	clients.Get(host).ClearOverride()
	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(1), received.Load())

	// Forced open on the server's Handler: the handler does not run.
	require.NoError(t, servers.Get(httpbreaker.DefaultHandlerKey).SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Minute}))
	resp, err = client.Get(srv.URL)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, int64(1), received.Load())
}
