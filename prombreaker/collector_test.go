package prombreaker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/prombreaker"
)

func TestCollector_scrapedOverHTTP(t *testing.T) {
	m := newMock()
	r := newRegistry(m)
	payments := r.Get("payments")
	record(t, payments, 30, 0)
	m.Add(10 * time.Millisecond)
	record(t, payments, 0, 10) // the plain formula: p = (40 − 30)/(40 + 1)
	record(t, r.Get("search"), 5, 0)
	inventory := r.Get("inventory")
	record(t, inventory, 0, 200)
	before := inventory.Stats()
	dropped := 0
	for range 2000 { // asks without reporting: only the drops count
		if _, err := inventory.Allow(); err != nil {
			dropped++
		}
	}
	r.NoBreakerFor("legacy") // a Nop breaker reports nothing

	reg := prometheus.NewPedanticRegistry() // also checks Collect against Describe
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(r)))
	families := scrape(t, server(t, reg))

	want := map[string]struct {
		typ  dto.MetricType
		help string
	}{
		"srebreaker_requests_total": {dto.MetricType_COUNTER,
			"Calls that asked the breaker: those it admitted that succeeded or failed, and those it dropped."},
		"srebreaker_successes_total": {dto.MetricType_COUNTER, "Calls the breaker admitted that succeeded."},
		"srebreaker_failures_total":  {dto.MetricType_COUNTER, "Calls the breaker admitted that failed."},
		"srebreaker_drops_total": {dto.MetricType_COUNTER,
			"Calls the breaker dropped without running them."},
		"srebreaker_drop_probability": {dto.MetricType_GAUGE,
			"Probability that a call asking the breaker now is dropped, from 0 (healthy) to 1."},
		"srebreaker_window_successes": {dto.MetricType_GAUGE,
			"Admitted calls that succeeded within the breaker's rolling window."},
		"srebreaker_window_failures": {dto.MetricType_GAUGE,
			"Admitted calls that failed within the breaker's rolling window."},
		"srebreaker_window_drops": {dto.MetricType_GAUGE,
			"Calls dropped within the breaker's rolling window."},
	}
	require.Len(t, families, len(want), "the collector's families and no others")
	for name, w := range want {
		mf := families[name]
		require.NotNil(t, mf, name)
		assert.Equal(t, w.typ, mf.GetType(), name)
		assert.Equal(t, w.help, mf.GetHelp(), name)
		var breakers []string
		for _, m := range mf.GetMetric() {
			require.Len(t, m.GetLabel(), 1, name)
			assert.Equal(t, "breaker", m.GetLabel()[0].GetName(), name)
			breakers = append(breakers, m.GetLabel()[0].GetValue())
		}
		assert.ElementsMatch(t, []string{"payments", "search", "inventory"}, breakers, "%s: no series for legacy", name)
	}

	// The clock has stood still since the scrape: the snapshots hold what it saw.
	for _, name := range []string{"payments", "search", "inventory"} {
		s := r.Get(name).Stats()
		get := func(family string) float64 {
			v, ok := sample(families, family, name)
			require.True(t, ok, "%s{breaker=%q}", family, name)
			return v
		}
		assert.Equal(t, float64(s.TotalSuccesses+s.TotalFailures+s.TotalDrops), get("srebreaker_requests_total"), name)
		assert.Equal(t, float64(s.TotalSuccesses), get("srebreaker_successes_total"), name)
		assert.Equal(t, float64(s.TotalFailures), get("srebreaker_failures_total"), name)
		assert.Equal(t, float64(s.TotalDrops), get("srebreaker_drops_total"), name)
		assert.Equal(t, s.DropProbability, get("srebreaker_drop_probability"), name)
		assert.Equal(t, float64(s.Successes), get("srebreaker_window_successes"), name)
		assert.Equal(t, float64(s.Failures), get("srebreaker_window_failures"), name)
		assert.Equal(t, float64(s.Drops), get("srebreaker_window_drops"), name)
	}

	// And the values themselves.
	v, _ := sample(families, "srebreaker_successes_total", "payments")
	assert.Equal(t, 30.0, v)
	v, _ = sample(families, "srebreaker_failures_total", "payments")
	assert.Equal(t, 10.0, v)
	v, _ = sample(families, "srebreaker_drop_probability", "payments")
	assert.InDelta(t, 10.0/41, v, 1e-12)
	v, _ = sample(families, "srebreaker_requests_total", "search")
	assert.Equal(t, 5.0, v)
	v, _ = sample(families, "srebreaker_drop_probability", "search")
	assert.Equal(t, 0.0, v)
	drops, _ := sample(families, "srebreaker_drops_total", "inventory")
	assert.Equal(t, float64(dropped), drops-float64(before.TotalDrops), "every drop counted")
	requests, _ := sample(families, "srebreaker_requests_total", "inventory")
	assert.Equal(t, 200+drops, requests, "failures and drops; the unreported calls count in none")
	v, _ = sample(families, "srebreaker_drop_probability", "inventory")
	assert.InDelta(t, 200.0/201, v, 1e-12)
}

// leveled makes calls at each level through b, 10 of each level a bucket
// for 30 buckets of 100 ms, against a dependency that serves 20 calls a
// bucket, the highest levels first, and fails the rest.
func leveled(t *testing.T, b breaker.Breaker, m *clock.Mock) {
	t.Helper()
	levels := []criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}
	for range 30 {
		for i, c := range levels {
			ctx := criticality.With(context.Background(), c)
			for range 10 {
				p, err := b.AllowCtx(ctx)
				if err != nil {
					continue
				}
				if i < 2 {
					p.Accept()
				} else {
					p.Reject("overloaded")
				}
			}
		}
		m.Add(100 * time.Millisecond)
	}
}

func TestCollector_criticalityScrapedOverHTTP(t *testing.T) {
	m := newMock()
	r := newRegistry(m)
	payments := r.Get("payments")
	record(t, payments, 5, 0) // calls without a level: CRITICAL's
	leveled(t, payments, m)
	record(t, r.Get("search"), 5, 0)
	// A call at the default level is a call without one.
	p, err := r.Get("search").AllowCtx(criticality.With(context.Background(), criticality.Critical))
	require.NoError(t, err)
	p.Accept()

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(r)))
	families := scrape(t, server(t, reg))
	assert.Len(t, families, 13, "the eight families and the five by criticality")

	s := payments.Stats()
	require.True(t, s.Leveled())
	want := map[string]func(c criticality.Stats) float64{
		"srebreaker_requests_by_criticality_total": func(c criticality.Stats) float64 {
			return float64(c.TotalSuccesses + c.TotalFailures + c.TotalDrops)
		},
		"srebreaker_successes_by_criticality_total": func(c criticality.Stats) float64 { return float64(c.TotalSuccesses) },
		"srebreaker_failures_by_criticality_total":  func(c criticality.Stats) float64 { return float64(c.TotalFailures) },
		"srebreaker_drops_by_criticality_total":     func(c criticality.Stats) float64 { return float64(c.TotalDrops) },
		"srebreaker_drop_probability_by_criticality": func(c criticality.Stats) float64 {
			return c.DropProbability
		},
	}
	for name, value := range want {
		mf := families[name]
		require.NotNil(t, mf, name)
		got := map[string]float64{}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			require.Len(t, labels, 2, name)
			assert.Equal(t, "payments", labels["breaker"], "%s: no series for search, which saw no other level", name)
			if c := m.GetCounter(); c != nil {
				got[labels["criticality"]] = c.GetValue()
			} else {
				got[labels["criticality"]] = m.GetGauge().GetValue()
			}
		}
		wantValues := map[string]float64{}
		for _, c := range s.Criticalities {
			wantValues[c.Level.String()] = value(c)
		}
		assert.Equal(t, wantValues, got, name)
	}

	// The levels add up to the breaker's own series, which stay as they are.
	get := func(family string) float64 {
		v, ok := sample(families, family, "payments")
		require.True(t, ok, family)
		return v
	}
	for _, family := range []string{"requests", "successes", "failures", "drops"} {
		sum := 0.0
		for _, m := range families["srebreaker_"+family+"_by_criticality_total"].GetMetric() {
			sum += m.GetCounter().GetValue()
		}
		assert.Equal(t, get("srebreaker_"+family+"_total"), sum, family)
	}
	critical := func(family, level string) float64 {
		for _, m := range families[family].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "criticality" && l.GetValue() == level {
					return m.GetCounter().GetValue()
				}
			}
		}
		t.Fatalf("%s{criticality=%q}: missing", family, level)
		return 0
	}
	assert.Equal(t, 300.0, critical("srebreaker_requests_by_criticality_total", "CRITICAL_PLUS"))
	assert.Equal(t, 305.0, critical("srebreaker_requests_by_criticality_total", "CRITICAL"), "with the calls without a level")
	assert.Equal(t, 0.0, critical("srebreaker_drops_by_criticality_total", "CRITICAL_PLUS"))
	assert.Greater(t, critical("srebreaker_drops_by_criticality_total", "SHEDDABLE"), 0.0)
	assert.Equal(t, 0.0, critical("srebreaker_successes_by_criticality_total", "SHEDDABLE"))
}

func TestCollector_criticalityOverSources(t *testing.T) {
	m := newMock()
	clients := newRegistry(m)
	leveled(t, clients.Get("payments"), m)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(prombreaker.Sources{"client": clients},
		prombreaker.WithNamespace("shop"), prombreaker.WithConstLabels(prometheus.Labels{"zone": "a"}))))
	mf := scrape(t, server(t, reg))["shop_requests_by_criticality_total"]
	require.NotNil(t, mf)
	require.Len(t, mf.GetMetric(), 4, "a series per level")
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		_, err := criticality.Parse(labels["criticality"])
		assert.NoError(t, err)
		assert.Equal(t, map[string]string{"breaker": "payments", "source": "client", "zone": "a",
			"criticality": labels["criticality"]}, labels)
	}
	problems, err := testutil.CollectAndLint(prombreaker.MustNewCollector(clients))
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, 8+4*5, testutil.CollectAndCount(prombreaker.MustNewCollector(clients)),
		"eight series, and five per level")
}

func TestCollector_lint(t *testing.T) {
	m := newMock()
	r := newRegistry(m)
	record(t, r.Get("payments"), 10, 10)
	problems, err := testutil.CollectAndLint(prombreaker.MustNewCollector(r))
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, 8, testutil.CollectAndCount(prombreaker.MustNewCollector(r)), "eight series per breaker")
}

func TestCollector_emptySourceScrapes(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prombreaker.MustNewCollector(new(breaker.Registry)))
	assert.Empty(t, scrape(t, server(t, reg)))
}

func TestNewCollector_namespaceAndConstLabels(t *testing.T) {
	m := newMock()
	client, srv := newRegistry(m), newRegistry(m)
	record(t, client.Get("payments"), 3, 0)
	record(t, srv.Get("payments"), 7, 0)

	reg := prometheus.NewPedanticRegistry()
	opts := func(side string) []prombreaker.Option {
		return []prombreaker.Option{prombreaker.WithNamespace("shop"),
			prombreaker.WithConstLabels(prometheus.Labels{"side": side}),
			prombreaker.WithConstLabels(prometheus.Labels{"zone": "a"})}
	}
	c1, err := prombreaker.NewCollector(client, opts("client")...)
	require.NoError(t, err)
	c2, err := prombreaker.NewCollector(srv, opts("server")...)
	require.NoError(t, err)
	require.NoError(t, reg.Register(c1))
	require.NoError(t, reg.Register(c2), "constant labels tell the two apart")

	families := scrape(t, server(t, reg))
	assert.NotContains(t, families, "srebreaker_successes_total")
	mf := families["shop_successes_total"]
	require.NotNil(t, mf)
	got := map[string]float64{}
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, "payments", labels["breaker"])
		assert.Equal(t, "a", labels["zone"])
		got[labels["side"]] = m.GetCounter().GetValue()
	}
	assert.Equal(t, map[string]float64{"client": 3, "server": 7}, got)
}

func TestNewCollector_invalid(t *testing.T) {
	r := breaker.MustNewRegistry()
	labels := func(name, value string) prombreaker.Option {
		return prombreaker.WithConstLabels(prometheus.Labels{name: value})
	}
	tests := []struct {
		name string
		src  breaker.Source
		opt  prombreaker.Option
		want string
	}{
		{name: "nil source", src: nil, want: "NewCollector(nil): the source of breakers must not be nil"},
		{name: "nil registry", src: (*breaker.Registry)(nil),
			want: "NewCollector(nil): the source of breakers must not be nil"},
		{name: "empty namespace", src: r, opt: prombreaker.WithNamespace(""),
			want: `WithNamespace(""): a namespace is a letter or an underscore, then letters, digits and underscores`},
		{name: "dash in namespace", src: r, opt: prombreaker.WithNamespace("my-app"),
			want: `WithNamespace("my-app"): a namespace is a letter or an underscore, then letters, digits and underscores`},
		{name: "colon in namespace", src: r, opt: prombreaker.WithNamespace("app:x"),
			want: `WithNamespace("app:x"): a namespace is a letter or an underscore, then letters, digits and underscores`},
		{name: "digit first", src: r, opt: prombreaker.WithNamespace("1app"),
			want: `WithNamespace("1app"): a namespace is a letter or an underscore, then letters, digits and underscores`},
		{name: "label name", src: r, opt: labels("my-side", "x"),
			want: `WithConstLabels("my-side"="x"): a label name is a letter or an underscore, then letters, digits and underscores`},
		{name: "reserved label", src: r, opt: labels("__name__", "x"),
			want: `WithConstLabels("__name__"="x"): names that start with __ are reserved`},
		{name: "breaker label", src: r, opt: labels("breaker", "x"),
			want: `WithConstLabels("breaker"="x"): the collector sets "breaker" to each breaker's name`},
		{name: "criticality label", src: r, opt: labels("criticality", "x"),
			want: `WithConstLabels("criticality"="x"): the collector sets "criticality" to each level's name`},
		{name: "label value", src: r, opt: labels("side", "\xff"),
			want: `WithConstLabels("side"="\xff"): the value is not valid UTF-8`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []prombreaker.Option
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			c, err := prombreaker.NewCollector(tc.src, opts...)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, prombreaker.ErrInvalidOption)
			assert.EqualError(t, err, "prombreaker: invalid option: "+tc.want)
			assert.PanicsWithValue(t, "prombreaker: invalid option: "+tc.want, func() {
				prombreaker.MustNewCollector(tc.src, opts...)
			})
		})
	}
}

func TestCollector_breakersOutsideARegistry(t *testing.T) {
	m := newMock()
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(m))
	record(t, b, 4, 1)
	odd := breaker.MustNew(breaker.WithName("odd\xffname"), breaker.WithClock(m))
	record(t, odd, 2, 0)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prombreaker.MustNewCollector(breakers{b, breaker.Nop(), odd}))
	families := scrape(t, server(t, reg))
	v, ok := sample(families, "srebreaker_requests_total", "payments")
	assert.True(t, ok)
	assert.Equal(t, 5.0, v)
	v, ok = sample(families, "srebreaker_successes_total", `odd\xffname`)
	assert.True(t, ok, "a name that is not valid UTF-8 is made valid rather than failing the scrape")
	assert.Equal(t, 2.0, v)
	_, ok = sample(families, "srebreaker_requests_total", "nop")
	assert.False(t, ok)
}

func TestCollector_hotPathStaysFreeOfAllocations(t *testing.T) {
	r := breaker.MustNewRegistry() // the system clock, as in production
	b := r.Get("payments")
	reg := prometheus.NewRegistry()
	reg.MustRegister(prombreaker.MustNewCollector(r))
	url := server(t, reg)
	record(t, b, 10, 0)
	_, ok := sample(scrape(t, url), "srebreaker_requests_total", "payments")
	require.True(t, ok)

	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow()
		p.Accept()
	}), "Allow and Accept with a collector attached")
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		if p, err := r.Get("payments").Allow(); err == nil {
			p.Reject("down")
		}
	}), "registry lookup, Allow and Reject or a drop, with a collector attached")
	_, ok = sample(scrape(t, url), "srebreaker_requests_total", "payments")
	require.True(t, ok)
}

func TestCollector_scrapesWhileCallsRun(t *testing.T) {
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithWindow(time.Hour))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prombreaker.MustNewCollector(r))
	url := server(t, reg)

	const workers, calls = 4, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := r.Get(fmt.Sprint("dep-", w)) // the registry grows while it is scraped
			for range calls {
				p, err := b.Allow()
				if err == nil {
					p.Accept()
				}
			}
		}()
	}
	last := map[string]float64{}
	for range 20 {
		families := scrape(t, url)
		for w := range workers {
			name := fmt.Sprint("dep-", w)
			v, ok := sample(families, "srebreaker_successes_total", name)
			if !ok {
				continue
			}
			assert.GreaterOrEqual(t, v, last[name], "a counter never goes down")
			assert.LessOrEqual(t, v, float64(calls))
			last[name] = v
		}
		m.Add(time.Millisecond)
	}
	wg.Wait()
	families := scrape(t, url)
	for w := range workers {
		name := fmt.Sprint("dep-", w)
		v, _ := sample(families, "srebreaker_successes_total", name)
		assert.Equal(t, float64(calls), v, name)
		v, _ = sample(families, "srebreaker_window_successes", name)
		assert.Equal(t, float64(calls), v, name)
	}
}

func TestCollector_sources(t *testing.T) {
	m := newMock()
	clients, servers := newRegistry(m), newRegistry(m)
	record(t, clients.Get("payments"), 3, 0)
	record(t, servers.Get("payments"), 7, 1)
	standalone := breaker.MustNew(breaker.WithName("search"), breaker.WithClock(m))
	record(t, standalone, 2, 0)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(prombreaker.Sources{
		"client": clients, "server": servers, "other": breakers{standalone},
	}, prombreaker.WithConstLabels(prometheus.Labels{"zone": "a"}))))

	type series struct{ breaker, source string }
	want := map[series]float64{{"payments", "client"}: 3, {"payments", "server"}: 7, {"search", "other"}: 2}
	check := func(mf *dto.MetricFamily, how string) {
		t.Helper()
		require.NotNil(t, mf, how)
		got := map[series]float64{}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			assert.Equal(t, map[string]string{"breaker": labels["breaker"], "source": labels["source"], "zone": "a"},
				labels, how)
			got[series{labels["breaker"], labels["source"]}] = m.GetCounter().GetValue()
		}
		assert.Equal(t, want, got, how)
	}

	families, err := reg.Gather()
	require.NoError(t, err)
	gathered := map[string]*dto.MetricFamily{}
	for _, mf := range families {
		gathered[mf.GetName()] = mf
	}
	assert.Len(t, gathered, 8)
	check(gathered["srebreaker_successes_total"], "gathered")
	check(scrape(t, server(t, reg))["srebreaker_successes_total"], "scraped over HTTP")
}

func TestCollector_secondCollectorRefused(t *testing.T) {
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(breaker.MustNewRegistry())))
	assert.Error(t, reg.Register(prombreaker.MustNewCollector(breaker.MustNewRegistry())),
		"the same metrics twice: what Sources is for")
}

func TestNewCollector_invalidSources(t *testing.T) {
	r := breaker.MustNewRegistry()
	tests := []struct {
		name string
		src  prombreaker.Sources
		opt  prombreaker.Option
		want string
	}{
		{name: "empty name", src: prombreaker.Sources{"": r, "a": r},
			want: `NewCollector(Sources{"": …}): a source's name must not be empty`},
		{name: "nil source", src: prombreaker.Sources{"a": r, "b": nil},
			want: `NewCollector(Sources{"b": nil}): a source must not be nil`},
		{name: "nil registry", src: prombreaker.Sources{"a": (*breaker.Registry)(nil)},
			want: `NewCollector(Sources{"a": nil}): a source must not be nil`},
		{name: "name not UTF-8", src: prombreaker.Sources{"\xff": r},
			want: `NewCollector(Sources{"\xff": …}): a source's name must be valid UTF-8`},
		{name: "source label", src: prombreaker.Sources{"a": r},
			opt:  prombreaker.WithConstLabels(prometheus.Labels{"source": "x"}),
			want: `WithConstLabels("source"="x"): a collector over Sources sets "source" to each source's name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []prombreaker.Option
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			c, err := prombreaker.NewCollector(tc.src, opts...)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, prombreaker.ErrInvalidOption)
			assert.EqualError(t, err, "prombreaker: invalid option: "+tc.want)
		})
	}
	c, err := prombreaker.NewCollector(r, prombreaker.WithConstLabels(prometheus.Labels{"source": "x"}))
	assert.NoError(t, err, "a collector over one source may use the label for a constant")
	assert.NotNil(t, c)
}

func TestSources_Range(t *testing.T) {
	a := breaker.MustNew(breaker.WithName("a"))
	b := breaker.MustNew(breaker.WithName("b"))
	r := breaker.MustNewRegistry()
	r.Get("c")
	src := prombreaker.Sources{"y": r, "x": breakers{a, nil, b, breaker.Nop()}}
	var names []string
	src.Range(func(name string, _ breaker.Breaker) bool {
		names = append(names, name)
		return true
	})
	assert.Equal(t, []string{"x/a", "x/b", "x/nop", "y/c"}, names, "sources by name, each in its order, nil skipped")

	names = nil
	src.Range(func(name string, _ breaker.Breaker) bool {
		names = append(names, name)
		return len(names) < 2
	})
	assert.Equal(t, []string{"x/a", "x/b"}, names, "false stops the iteration")
}

// Issue 11: "a\xff" and "a\xfe" both became "a\uFFFD": Gather failed on
// the duplicate series, and promhttp answered 500 for all of /metrics.
func TestCollector_namesThatEscapeAlikeStayApart(t *testing.T) {
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m))
	for i, name := range []string{"a\xff", "a\xfe", `a\xff`, "a\uFFFD", "ok"} {
		record(t, r.Get(name), i+1, 0)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prombreaker.MustNewCollector(r))
	_, err := reg.Gather()
	require.NoError(t, err, "one odd name never fails the scrape")
	families := scrape(t, server(t, reg))
	want := map[string]float64{ // names valid as they are keep them; the rest escape, apart
		`a\xff`: 3, "a\uFFFD": 4, "ok": 5, `a\xfe`: 2, `a\xff (2)`: 1,
	}
	for label, n := range want {
		v, ok := sample(families, "srebreaker_successes_total", label)
		assert.True(t, ok, "a series labelled %q", label)
		assert.Equal(t, n, v, "label %q", label)
	}
	assert.Len(t, families["srebreaker_successes_total"].GetMetric(), 5, "one series per breaker")
}

// breakers is a [breaker.Source] over a fixed list of breakers, nil ones
// skipped.
type breakers []breaker.Breaker

func (bs breakers) Range(f func(name string, b breaker.Breaker) bool) {
	for _, b := range bs {
		if b != nil && !f(b.Name(), b) {
			return
		}
	}
}

func TestNewCollector_nilOption(t *testing.T) {
	c, err := prombreaker.NewCollector(breaker.MustNewRegistry(), nil)
	assert.Nil(t, c)
	assert.ErrorIs(t, err, prombreaker.ErrInvalidOption)
	assert.EqualError(t, err, "prombreaker: invalid option: a nil Option was given")
}
