package prombreaker_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// newMock returns a mock clock set to a realistic instant.
func newMock() *clock.Mock {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return m
}

// newRegistry returns a registry whose breakers read m, draw from a seeded
// source and use the plain formula with K = 1 and no protection, so that
// their drop probability is (requests − accepts) / (requests + 1).
func newRegistry(m *clock.Mock) *breaker.Registry {
	return breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
		breaker.WithPlainFormula(), breaker.WithK(1), breaker.WithProtection(0))
}

// record reports successes, then failures, through Allow, Accept and
// Reject, asking again when a call is dropped.
func record(t *testing.T, b breaker.Breaker, successes, failures int) {
	t.Helper()
	for done, asked := 0, 0; done < successes+failures; asked++ {
		require.Less(t, asked, 1000*(successes+failures), "the breaker drops every call")
		p, err := b.Allow()
		if err != nil {
			continue
		}
		if done < successes {
			p.Accept()
		} else {
			p.Reject("down")
		}
		done++
	}
}

// server serves reg's metrics through promhttp on 127.0.0.1, with a port
// the system picks, until the test ends.
func server(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// scrape gets url, checks that the answer is the text exposition format
// and returns the metric families it holds, by name.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")

	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err, "%s", body)
	return families
}

// sample returns the value of family name's series for breaker, and
// whether there is one.
func sample(families map[string]*dto.MetricFamily, name, breakerName string) (float64, bool) {
	mf, ok := families[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "breaker" && l.GetValue() == breakerName {
				if c := m.GetCounter(); c != nil {
					return c.GetValue(), true
				}
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}
