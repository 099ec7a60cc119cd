package httpbreaker_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// successes returns the successes b has counted since it was made.
func successes(t *testing.T, b breaker.Breaker) int64 {
	t.Helper()
	s := b.Stats()
	return s.TotalSuccesses
}

func TestTransportAndHandler_shareTheDefaultRegistry(t *testing.T) {
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	def := breaker.DefaultRegistry()
	// Deltas, since the registry lives as long as the process.
	clientBefore, serverBefore := successes(t, def.Get(host)), successes(t, def.Get(httpbreaker.DefaultHandlerKey))
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil)}
	t.Cleanup(client.CloseIdleConnections)
	for range 3 {
		resp, err := client.Get(srv.URL + "/anything")
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}
	assert.Equal(t, clientBefore+3, successes(t, def.Get(host)), "the Transport's breaker, named by the host")
	assert.Equal(t, serverBefore+3, successes(t, def.Get(httpbreaker.DefaultHandlerKey)),
		"the Handler's breaker, apart from the client's")
	assert.Equal(t, "server:http", httpbreaker.DefaultHandlerKey)
}

func TestWithRegistry_keepsBreakersApart(t *testing.T) {
	clients, servers := breaker.MustNewRegistry(), breaker.MustNewRegistry()
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		httpbreaker.WithRegistry(servers))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(clients))}
	t.Cleanup(client.CloseIdleConnections)

	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())

	names := func(r *breaker.Registry) []string {
		var names []string
		r.Range(func(name string, _ breaker.Breaker) bool {
			names = append(names, name)
			return true
		})
		return names
	}
	assert.Equal(t, []string{host}, names(clients))
	assert.Equal(t, []string{httpbreaker.DefaultHandlerKey}, names(servers))
	assert.Equal(t, int64(1), successes(t, clients.Get(host)))
	assert.Equal(t, int64(1), successes(t, servers.Get(httpbreaker.DefaultHandlerKey)))
}

// Issue 11: a Transport facing hosts chosen by others (100,000 Host
// values) kept a breaker for each, for ever.
func TestTransport_manyHostsAreBoundedByDefault(t *testing.T) {
	base := serve(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	client := &http.Client{Transport: httpbreaker.MustNewTransport(newLoopback(t, strings.TrimPrefix(base, "http://")))}
	const hosts = breaker.DefaultLimit + 500
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < hosts; i += workers {
				resp, err := client.Get(fmt.Sprintf("http://host-%d.example/", i))
				if !assert.NoError(t, err) {
					return
				}
				assert.NoError(t, resp.Body.Close())
			}
		}()
	}
	wg.Wait()
	kept := 0
	breaker.DefaultRegistry().Range(func(name string, _ breaker.Breaker) bool {
		if strings.HasPrefix(name, "host-") {
			kept++
		}
		return true
	})
	assert.LessOrEqual(t, kept, breaker.DefaultLimit, "the default registry is bounded")
	assert.Greater(t, kept, breaker.DefaultLimit/2)
}
