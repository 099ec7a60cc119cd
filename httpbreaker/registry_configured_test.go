package httpbreaker_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// Regression (issue 43): a host given to Configure, whose breaker the
// Transport made on its first call, was kept as a name from outside:
// under SetLimit pressure from other hosts it was forgotten, and the next
// call made a new breaker that exporters showed in its place.
func TestTransport_RoundTrip_configuredHostIsNeverForgotten(t *testing.T) {
	base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	host := strings.TrimPrefix(base, "http://")
	r := breaker.MustNewRegistry()
	r.SetLimit(10)
	require.NoError(t, r.Configure(host, breaker.WithK(3)))
	client := &http.Client{Transport: httpbreaker.MustNewTransport(newLoopback(t, host), httpbreaker.WithRegistry(r))}
	get := func(url string) {
		t.Helper()
		resp, err := client.Get(url)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}

	get(base + "/first")
	first, ok := r.Lookup(host)
	require.True(t, ok, "the Transport made the configured host's breaker")
	for i := range 50 {
		get(fmt.Sprintf("http://host-%d.test/", i))
	}
	get(base + "/again")

	kept, ok := r.Lookup(host)
	require.True(t, ok, "the configured host is still held")
	assert.True(t, first == kept, "the breaker the Transport made first is the one kept")
	assert.Equal(t, int64(2), kept.Stats().TotalSuccesses, "both calls on the one breaker")
	hosts := 0
	r.Range(func(string, breaker.Breaker) bool { hosts++; return true })
	assert.Equal(t, 11, hosts, "10 hosts within the limit, and the configured one besides")
}
