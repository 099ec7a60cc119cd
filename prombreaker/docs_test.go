package prombreaker_test

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/prombreaker"
)

// The snippets of docs/guide/http.md and docs/guide/observability.md, as they appear
// there; the test below runs them as one program.
const (
	docsHTTPClient = "```go\n" +
		"client := &http.Client{Transport: httpbreaker.MustNewTransport(nil)}\n" +
		"resp, err := client.Get(paymentsURL + \"/charges\")\n" +
		"if errors.Is(err, breaker.ErrServiceUnavailable) { // through *url.Error too\n" +
		"\t// dropped, never sent; or set httpbreaker.WithFallback to answer instead\n" +
		"}\n" +
		"```\n"
	docsMetrics = "```go\n" +
		"prometheus.MustRegister(prombreaker.MustNewCollector(breaker.DefaultRegistry()))\n" +
		"http.Handle(\"/metrics\", promhttp.Handler())\n" +
		"```\n"
)

func TestDocs_holdTheSnippets(t *testing.T) {
	for _, tc := range []struct{ page, snippet string }{
		{"../docs/guide/http.md", docsHTTPClient},
		{"../docs/guide/observability.md", docsMetrics},
	} {
		page, err := os.ReadFile(tc.page)
		if errors.Is(err, fs.ErrNotExist) {
			t.Skip("no docs: the module is not in its repository")
		}
		require.NoError(t, err)
		assert.True(t, strings.Contains(string(page), tc.snippet),
			"%s holds the snippet that the test below runs:\n%s", tc.page, tc.snippet)
	}
}

// docsMetricsOnce runs the Prometheus snippet once per process: it registers
// with the global Prometheus registry and http.DefaultServeMux, which
// refuse a second registration when the tests run again (-count).
var docsMetricsOnce sync.Once

// The HTTP client and Prometheus snippets of the docs pasted into one
// program export the
// breakers that the Transport makes: a scrape of /metrics over loopback
// holds the dependency's host.
func TestDocs_httpAndMetricsSnippetsExportTheTransportsBreakers(t *testing.T) {
	// The dependency: a real server on loopback that fails.
	var received atomic.Int64
	payments := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(payments.Close)
	paymentsURL := payments.URL
	host := strings.TrimPrefix(paymentsURL, "http://")
	// Not in the docs: a mock clock and a seeded source for this host's
	// breaker, so that the counts are exact.
	require.NoError(t, breaker.DefaultRegistry().Configure(host,
		breaker.WithClock(newMock()), breaker.WithProba(proba.NewSeeded(1))))

	// The Prometheus snippet.
	docsMetricsOnce.Do(func() {
		prometheus.MustRegister(prombreaker.MustNewCollector(breaker.DefaultRegistry()))
		http.Handle("/metrics", promhttp.Handler())
	})
	metrics := httptest.NewServer(http.DefaultServeMux) // what http.ListenAndServe(addr, nil) serves
	t.Cleanup(metrics.Close)

	// The HTTP snippet, 100 times.
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil)}
	t.Cleanup(client.CloseIdleConnections)
	failed, dropped := 0, 0
	for range 100 {
		resp, err := client.Get(paymentsURL + "/charges")
		if errors.Is(err, breaker.ErrServiceUnavailable) { // through *url.Error too
			// dropped, never sent; or set httpbreaker.WithFallback to answer instead
			dropped++
			continue
		}
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		failed++
	}
	assert.Equal(t, 21, failed)
	assert.Equal(t, 79, dropped)

	families := scrape(t, metrics.URL+"/metrics")
	get := func(family string) float64 {
		t.Helper()
		v, ok := sample(families, family, host)
		require.True(t, ok, "%s{breaker=%q} is exported", family, host)
		return v
	}
	assert.Equal(t, int64(21), received.Load(), "dropped requests are never sent")
	assert.Equal(t, 21.0, get("srebreaker_failures_total"), "every request the server received failed")
	assert.Equal(t, 0.0, get("srebreaker_successes_total"))
	assert.Equal(t, 21+get("srebreaker_drops_total"), get("srebreaker_requests_total"))
	assert.Positive(t, get("srebreaker_drops_total"), "drops are counted")
	assert.Equal(t, 21.0, get("srebreaker_window_failures"))
	assert.Positive(t, get("srebreaker_drop_probability"))
	assert.Len(t, srebreakerFamilies(families), 8, "every family of the collector")
}

// srebreakerFamilies returns the names of the families of this module's
// metrics among those scraped.
func srebreakerFamilies[V any](families map[string]V) []string {
	var names []string
	for name := range families {
		if strings.HasPrefix(name, "srebreaker_") {
			names = append(names, name)
		}
	}
	return names
}
