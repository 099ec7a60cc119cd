package otelbreaker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/otelbreaker"
)

func TestRegister_instruments(t *testing.T) {
	r, _ := newRegistry(t)
	reader := newReader(t, r)
	r.Get("payments") // a metric without data points is left out
	got := collect(t, reader)

	tests := []struct {
		name, unit string
		gauge      bool
	}{
		{name: "srebreaker.requests", unit: "{call}"},
		{name: "srebreaker.successes", unit: "{call}"},
		{name: "srebreaker.failures", unit: "{call}"},
		{name: "srebreaker.drops", unit: "{call}"},
		{name: "srebreaker.drop_probability", unit: "1", gauge: true},
	}
	require.Len(t, got, len(tests))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := got[tc.name]
			require.True(t, ok, "instrument missing")
			assert.Equal(t, tc.unit, m.Unit)
			assert.NotEmpty(t, m.Description)
			if tc.gauge {
				assert.IsType(t, metricdata.Gauge[float64]{}, m.Data)
				return
			}
			require.IsType(t, metricdata.Sum[int64]{}, m.Data)
			sum := m.Data.(metricdata.Sum[int64])
			assert.True(t, sum.IsMonotonic, "a counter")
			assert.Equal(t, metricdata.CumulativeTemporality, sum.Temporality)
		})
	}
	assert.Equal(t, "Calls the breaker dropped.", got["srebreaker.drops"].Description)
}

func TestRegister_observesEachBreaker(t *testing.T) {
	r, _ := newRegistry(t)
	reader := newReader(t, r)

	record(t, r.Get("payments"), 30, 10)
	search := r.Get("search")
	failures := 0
	for range 200 { // a dead dependency: most of these are dropped
		if p, err := search.Allow(); err == nil {
			p.Reject("down")
			failures++
		}
	}
	r.Get("idle")
	r.NoBreakerFor("legacy")
	r.Get("legacy")

	got := collect(t, reader)
	want := search.Stats()
	require.Positive(t, want.TotalDrops)
	require.Positive(t, want.DropProbability)

	assert.Equal(t, map[string]int64{"payments": 40, "search": int64(failures) + want.TotalDrops, "idle": 0},
		points[int64](got["srebreaker.requests"]), "accepts + failures + drops; legacy (Nop) skipped")
	assert.Equal(t, map[string]int64{"payments": 30, "search": 0, "idle": 0},
		points[int64](got["srebreaker.successes"]))
	assert.Equal(t, map[string]int64{"payments": 10, "search": int64(failures), "idle": 0},
		points[int64](got["srebreaker.failures"]))
	assert.Equal(t, map[string]int64{"payments": 0, "search": want.TotalDrops, "idle": 0},
		points[int64](got["srebreaker.drops"]))
	probs := points[float64](got["srebreaker.drop_probability"])
	require.Len(t, probs, 3)
	assert.Zero(t, probs["payments"])
	assert.InDelta(t, want.DropProbability, probs["search"], 1e-12)
	assert.Zero(t, probs["idle"])
}

// levelPoints returns the values of m's data points by breaker name and
// level, for a sum or a gauge.
func levelPoints[N int64 | float64](t *testing.T, m metricdata.Metrics) map[[2]string]N {
	t.Helper()
	var dps []metricdata.DataPoint[N]
	switch d := m.Data.(type) {
	case metricdata.Sum[N]:
		require.True(t, d.IsMonotonic, "a counter")
		dps = d.DataPoints
	case metricdata.Gauge[N]:
		dps = d.DataPoints
	}
	got := make(map[[2]string]N, len(dps))
	for _, dp := range dps {
		require.Equal(t, 2, dp.Attributes.Len(), "breaker and criticality")
		name, _ := dp.Attributes.Value(otelbreaker.BreakerKey)
		level, _ := dp.Attributes.Value(otelbreaker.CriticalityKey)
		got[[2]string{name.AsString(), level.AsString()}] = dp.Value
	}
	return got
}

func TestRegister_observesEachLevel(t *testing.T) {
	r, m := newRegistry(t)
	reader := newReader(t, r)
	record(t, r.Get("search"), 5, 0)
	got := collect(t, reader)
	assert.Len(t, got, 5, "no instrument by criticality has data points before a call names a level")

	payments := r.Get("payments")
	record(t, payments, 5, 0) // calls without a level: CRITICAL's
	levels := []criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}
	for range 30 { // 10 calls of each level per 100 ms; the two sheddable levels fail
		for i, c := range levels {
			ctx := criticality.With(context.Background(), c)
			for range 10 {
				if p, err := payments.AllowCtx(ctx); err == nil {
					if i < 2 {
						p.Accept()
					} else {
						p.Reject("overloaded")
					}
				}
			}
		}
		m.Add(100 * time.Millisecond)
	}
	got = collect(t, reader)
	assert.Len(t, got, 10)
	s := payments.Stats()
	want := map[string]map[[2]string]int64{}
	for _, c := range s.Criticalities {
		key := [2]string{"payments", c.Level.String()}
		for name, v := range map[string]int64{
			"srebreaker.requests_by_criticality":  c.TotalSuccesses + c.TotalFailures + c.TotalDrops,
			"srebreaker.successes_by_criticality": c.TotalSuccesses,
			"srebreaker.failures_by_criticality":  c.TotalFailures,
			"srebreaker.drops_by_criticality":     c.TotalDrops,
		} {
			if want[name] == nil {
				want[name] = map[[2]string]int64{}
			}
			want[name][key] = v
		}
	}
	for name, w := range want {
		assert.Equal(t, w, levelPoints[int64](t, got[name]), "%s: payments' levels, nothing for search", name)
	}
	requests := levelPoints[int64](t, got["srebreaker.requests_by_criticality"])
	assert.Equal(t, int64(300), requests[[2]string{"payments", "CRITICAL_PLUS"}])
	assert.Equal(t, int64(305), requests[[2]string{"payments", "CRITICAL"}], "with the calls without a level")
	assert.Equal(t, points[int64](got["srebreaker.requests"])["payments"],
		requests[[2]string{"payments", "CRITICAL_PLUS"}]+requests[[2]string{"payments", "CRITICAL"}]+
			requests[[2]string{"payments", "SHEDDABLE_PLUS"}]+requests[[2]string{"payments", "SHEDDABLE"}],
		"the levels add up to the breaker's own data point, which stays as it is")
	probs := levelPoints[float64](t, got["srebreaker.drop_probability_by_criticality"])
	assert.Zero(t, probs[[2]string{"payments", "CRITICAL_PLUS"}])
	assert.Greater(t, probs[[2]string{"payments", "SHEDDABLE"}], 0.5)
}

func TestRegister_countersGrowBetweenCollections(t *testing.T) {
	r, _ := newRegistry(t)
	reader := newReader(t, r)
	record(t, r.Get("payments"), 3, 1)
	assert.Equal(t, map[string]int64{"payments": 3}, points[int64](collect(t, reader)["srebreaker.successes"]))

	record(t, r.Get("payments"), 2, 0)
	record(t, r.Get("search"), 1, 0)
	assert.Equal(t, map[string]int64{"payments": 5, "search": 1},
		points[int64](collect(t, reader)["srebreaker.successes"]), "cumulative; new breakers show up")
}

// set is a breaker.Source of the caller's own.
type set map[string]breaker.Breaker

func (s set) Range(f func(string, breaker.Breaker) bool) {
	for name, b := range s {
		if !f(name, b) {
			return
		}
	}
}

func TestRegister_sourceOfYourOwn(t *testing.T) {
	b := breaker.MustNew(breaker.WithName("ignored"))
	record(t, b, 2, 1)
	reader := newReader(t, set{"payments": b, "off": breaker.Nop()})
	assert.Equal(t, map[string]int64{"payments": 3}, points[int64](collect(t, reader)["srebreaker.requests"]),
		"named by Range, not by the breaker; Nop skipped")
}

func TestRegister_breakersAndARegistryWithOneProvider(t *testing.T) {
	r, _ := newRegistry(t)
	record(t, r.Get("payments"), 2, 0)
	b := breaker.MustNew(breaker.WithName("search"))
	record(t, b, 1, 1)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	for _, src := range []breaker.Source{r, breakers{b}} {
		reg, err := otelbreaker.Register(src, otelbreaker.WithMeterProvider(mp))
		require.NoError(t, err)
		t.Cleanup(func() { _ = reg.Unregister() })
	}
	got := collect(t, reader)
	assert.Equal(t, map[string]int64{"payments": 2, "search": 1}, points[int64](got["srebreaker.successes"]))
	assert.Equal(t, map[string]int64{"payments": 0, "search": 1}, points[int64](got["srebreaker.failures"]))
}

func TestRegister_unregisterStopsTheObservations(t *testing.T) {
	r, _ := newRegistry(t)
	record(t, r.Get("payments"), 1, 0)
	reader := sdkmetric.NewManualReader()
	reg, err := otelbreaker.Register(r,
		otelbreaker.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	require.NoError(t, err)
	require.Len(t, points[int64](collect(t, reader)["srebreaker.successes"]), 1)

	require.NoError(t, reg.Unregister())
	record(t, r.Get("payments"), 1, 0)
	for name, m := range collect(t, reader) {
		assert.Empty(t, points[int64](m), name)
		assert.Empty(t, points[float64](m), name)
	}
}

func TestRegister_globalProviderByDefault(t *testing.T) {
	r, _ := newRegistry(t)
	record(t, r.Get("payments"), 1, 0)
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	reg, err := otelbreaker.Register(r) // no WithMeterProvider: the global one
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, reg.Unregister()) })
	assert.Equal(t, map[string]int64{"payments": 1}, points[int64](collect(t, reader)["srebreaker.successes"]))
}

func TestRegister_noopProvider(t *testing.T) {
	r, _ := newRegistry(t)
	reg, err := otelbreaker.Register(r, otelbreaker.WithMeterProvider(noop.NewMeterProvider()))
	require.NoError(t, err)
	assert.NoError(t, reg.Unregister())
}

func TestRegister_invalid(t *testing.T) {
	r, _ := newRegistry(t)
	tests := []struct {
		name string
		src  breaker.Source
		opts []otelbreaker.Option
		want string
	}{
		{name: "nil source", src: nil,
			want: "otelbreaker: invalid option: Register(nil): the source of breakers must not be nil"},
		{name: "nil *breaker.Registry", src: (*breaker.Registry)(nil),
			want: "otelbreaker: invalid option: Register(nil): the source of breakers must not be nil"},
		{name: "nil provider", src: r, opts: []otelbreaker.Option{otelbreaker.WithMeterProvider(nil)},
			want: "otelbreaker: invalid option: WithMeterProvider(nil): meter provider must not be nil"},
		{name: "nil option", src: r, opts: []otelbreaker.Option{nil},
			want: "otelbreaker: invalid option: a nil Option was given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := otelbreaker.Register(tc.src, tc.opts...)
			assert.Nil(t, reg)
			assert.ErrorIs(t, err, otelbreaker.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// failingMeter fails to create the instrument or callback named fail.
type failingMeter struct {
	noop.Meter
	fail string
}

var errProvider = errors.New("provider: no more instruments")

func (m failingMeter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (
	metric.Int64ObservableCounter, error) {
	if name == m.fail {
		return nil, errProvider
	}
	return m.Meter.Int64ObservableCounter(name, opts...)
}

func (m failingMeter) Float64ObservableGauge(name string, opts ...metric.Float64ObservableGaugeOption) (
	metric.Float64ObservableGauge, error) {
	if name == m.fail {
		return nil, errProvider
	}
	return m.Meter.Float64ObservableGauge(name, opts...)
}

func (m failingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	if m.fail == "callback" {
		return nil, errProvider
	}
	return m.Meter.RegisterCallback(f, insts...)
}

type failingProvider struct {
	noop.MeterProvider
	fail string
}

func (p failingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return failingMeter{fail: p.fail}
}

func TestRegister_providerErrors(t *testing.T) {
	r, _ := newRegistry(t)
	tests := []struct{ fail, want string }{
		{"srebreaker.drops", "otelbreaker: creating srebreaker.drops: provider: no more instruments"},
		{"srebreaker.drop_probability", "otelbreaker: creating srebreaker.drop_probability: provider: no more instruments"},
		{"srebreaker.drops_by_criticality",
			"otelbreaker: creating srebreaker.drops_by_criticality: provider: no more instruments"},
		{"srebreaker.drop_probability_by_criticality",
			"otelbreaker: creating srebreaker.drop_probability_by_criticality: provider: no more instruments"},
		{"callback", "otelbreaker: registering the callback: provider: no more instruments"},
	}
	for _, tc := range tests {
		t.Run(tc.fail, func(t *testing.T) {
			reg, err := otelbreaker.Register(r, otelbreaker.WithMeterProvider(failingProvider{fail: tc.fail}))
			assert.Nil(t, reg)
			assert.ErrorIs(t, err, errProvider, "the provider's error passes through")
			assert.NotErrorIs(t, err, otelbreaker.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestRegister_collectWhileCallsRun(t *testing.T) {
	r, _ := newRegistry(t)
	reader := newReader(t, r)
	names := []string{"a", "b", "c"}

	var admitted atomic.Int64
	var workers sync.WaitGroup
	for w := range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range 500 {
				p, err := r.Get(names[(w+i)%len(names)]).Allow()
				if err != nil {
					continue
				}
				admitted.Add(1)
				if i%3 == 0 {
					p.Reject("down")
				} else {
					p.Accept()
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()

	last := map[string]int64{}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		got := collect(t, reader)
		requests := points[int64](got["srebreaker.requests"])
		for name, n := range requests {
			assert.GreaterOrEqual(t, n, last[name], "%s: a counter never goes down", name)
			last[name] = n
		}
	}

	got := collect(t, reader)
	var outcomes int64
	for _, n := range points[int64](got["srebreaker.successes"]) {
		outcomes += n
	}
	for _, n := range points[int64](got["srebreaker.failures"]) {
		outcomes += n
	}
	assert.Equal(t, admitted.Load(), outcomes, "every admitted call is counted once")
}

func TestRegister_hotPathStaysFreeOfAllocations(t *testing.T) {
	r := breaker.MustNewRegistry() // the system clock, as in production
	reader := newReader(t, r)
	b := r.Get("payments")
	collect(t, reader)
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, _ := r.Get("payments").Allow()
		p.Accept()
	}), "Get, Allow and Accept with an exporter attached")
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow()
		p.Accept()
	}))
	assert.Equal(t, map[string]int64{"payments": 2002}, points[int64](collect(t, reader)["srebreaker.successes"]),
		"1001 runs each, the first one a warm-up")
}

func TestRegister_twiceAddsUp(t *testing.T) {
	r, _ := newRegistry(t)
	record(t, r.Get("payments"), 1, 0)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	for range 2 {
		reg, err := otelbreaker.Register(r, otelbreaker.WithMeterProvider(mp))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, reg.Unregister()) })
	}
	assert.Equal(t, map[string]int64{"payments": 2}, points[int64](collect(t, reader)["srebreaker.successes"]),
		"the SDK adds up the two callbacks' observations, as the documentation warns")
}

// Issue 11: a name that is not valid UTF-8 went into the attribute as it
// was, which an OTLP exporter cannot encode; two such names must not meet
// once escaped either.
func TestRegister_namesThatEscapeAlikeStayApart(t *testing.T) {
	r, _ := newRegistry(t)
	reader := newReader(t, r)
	for i, name := range []string{"a\xff", "a\xfe", `a\xff`, "a\uFFFD", "ok"} {
		record(t, r.Get(name), i+1, 0)
	}
	got := points[int64](collect(t, reader)["srebreaker.successes"])
	assert.Equal(t, map[string]int64{`a\xff`: 3, "a\uFFFD": 4, "ok": 5, `a\xfe`: 2, `a\xff (2)`: 1}, got,
		"names valid as they are keep them; the rest escape, apart")
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
