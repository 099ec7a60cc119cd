package prombreaker_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/prombreaker"
)

// overloaded is a breaker whose Stats carry the figures of a server's
// overload limit given by hand.
type overloaded struct {
	breaker.Breaker
	overload breaker.OverloadStats
}

func (o overloaded) Stats() breaker.Stats {
	s := o.Breaker.Stats()
	s.Overload = &o.overload
	return s
}

// labelsOf returns the labels of m by name.
func labelsOf(m *dto.Metric) map[string]string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

func TestCollector_overloadScrapedOverHTTP(t *testing.T) {
	m := newMock()
	r := newRegistry(m)
	record(t, r.Get("server:http"), 10, 0)
	record(t, r.Get("payments"), 10, 0)
	srv := overloaded{Breaker: r.Get("server:http"), overload: breaker.OverloadStats{
		Limit: 12.5, InFlight: 12, Queued: 3, Overloaded: true, Rejected: [4]int64{0, 2, 40, 300}}}

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(breakers{srv, r.Get("payments")})))
	families := scrape(t, server(t, reg))
	assert.Len(t, families, 8+6, "the eight families and the six of the overload limit")

	gauges := map[string]struct {
		help string
		want float64
	}{
		"srebreaker_overload_limit": {"Calls the server guarded under the breaker's name lets into its handlers " +
			"at once, as its overload limit learned it.", 12.5},
		"srebreaker_overload_in_flight": {"Calls in the handlers of the server guarded under the breaker's name.", 12},
		"srebreaker_overload_queued": {"Calls waiting for room in the handlers of the server guarded under " +
			"the breaker's name.", 3},
		"srebreaker_overloaded": {"1 while calls arrive at the server guarded under the breaker's name faster " +
			"than its handlers serve them, 0 otherwise.", 1},
		"srebreaker_overload_queue_held": {"1 while, not overloaded, the server guarded under the breaker's name " +
			"holds its standing queue short and rejects the excess, 0 otherwise.", 0},
	}
	for name, g := range gauges {
		mf := families[name]
		require.NotNil(t, mf, name)
		assert.Equal(t, dto.MetricType_GAUGE, mf.GetType(), name)
		assert.Equal(t, g.help, mf.GetHelp(), name)
		require.Len(t, mf.GetMetric(), 1, "%s: no series for payments, which no server uses", name)
		assert.Equal(t, map[string]string{"breaker": "server:http"}, labelsOf(mf.GetMetric()[0]), name)
		assert.Equal(t, g.want, mf.GetMetric()[0].GetGauge().GetValue(), name)
	}

	mf := families["srebreaker_overload_rejections_total"]
	require.NotNil(t, mf)
	assert.Equal(t, dto.MetricType_COUNTER, mf.GetType())
	assert.Equal(t, "Calls at a criticality that the server guarded under the breaker's name rejected for want of room.",
		mf.GetHelp())
	got := map[string]float64{}
	for _, m := range mf.GetMetric() {
		labels := labelsOf(m)
		require.Len(t, labels, 2)
		assert.Equal(t, "server:http", labels["breaker"])
		got[labels["criticality"]] = m.GetCounter().GetValue()
	}
	assert.Equal(t, map[string]float64{"CRITICAL_PLUS": 0, "CRITICAL": 2, "SHEDDABLE_PLUS": 40, "SHEDDABLE": 300}, got,
		"Rejected's order is the levels', highest first")

	// The breaker's own series stay as they are.
	v, ok := sample(families, "srebreaker_successes_total", "server:http")
	assert.True(t, ok)
	assert.Equal(t, 10.0, v)

	problems, err := testutil.CollectAndLint(prombreaker.MustNewCollector(breakers{srv}))
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, 8+5+4, testutil.CollectAndCount(prombreaker.MustNewCollector(breakers{srv})),
		"eight series, five gauges of the limit and a rejection counter per level")
}

// A server whose standing queue is held short, not overloaded, says so in
// its own gauge: it rejects calls all the same.
func TestCollector_overloadQueueHeld(t *testing.T) {
	r := newRegistry(newMock())
	record(t, r.Get("server:http"), 10, 0)
	srv := overloaded{Breaker: r.Get("server:http"), overload: breaker.OverloadStats{
		Limit: 5, InFlight: 5, Queued: 20, QueueHeld: true, Rejected: [4]int64{0, 0, 0, 30}}}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(breakers{srv})))
	families := scrape(t, server(t, reg))
	for family, want := range map[string]float64{"srebreaker_overload_queue_held": 1, "srebreaker_overloaded": 0} {
		v, ok := sample(families, family, "server:http")
		require.True(t, ok, family)
		assert.Equal(t, want, v, family)
	}
}

// A Handler ties its overload limit to its breaker on its first request:
// the breaker's series then hold the limit's figures, the calls it holds
// in its handler among them.
func TestCollector_overloadOfAHandler(t *testing.T) {
	r := breaker.MustNewRegistry()
	const held = 3
	in, release := make(chan struct{}), make(chan struct{})
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		in <- struct{}{}
		<-release
	}), httpbreaker.WithRegistry(r), httpbreaker.WithOverloadLimit(true))
	var wg sync.WaitGroup
	for range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		}()
	}
	for range held {
		<-in
	}

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(r)))
	url := server(t, reg)
	families := scrape(t, url)
	get := func(family string) float64 {
		t.Helper()
		v, ok := sample(families, family, httpbreaker.DefaultHandlerKey)
		require.True(t, ok, "%s{breaker=%q} is exported", family, httpbreaker.DefaultHandlerKey)
		return v
	}
	assert.Equal(t, float64(held), get("srebreaker_overload_in_flight"), "the calls the handler holds")
	assert.Equal(t, 0.0, get("srebreaker_overload_queued"))
	assert.Equal(t, 0.0, get("srebreaker_overloaded"))
	assert.Equal(t, 0.0, get("srebreaker_overload_queue_held"))
	assert.GreaterOrEqual(t, get("srebreaker_overload_limit"), float64(held))
	assert.Len(t, families["srebreaker_overload_rejections_total"].GetMetric(), 4, "a series per level")

	close(release)
	wg.Wait()
	families = scrape(t, url)
	assert.Equal(t, 0.0, get("srebreaker_overload_in_flight"), "answered")
	assert.Equal(t, float64(held), get("srebreaker_successes_total"))
}
