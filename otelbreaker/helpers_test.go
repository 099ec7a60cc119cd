package otelbreaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/otelbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// newRegistry returns a registry whose breakers read a mock clock, set to
// a realistic instant, and draw from a seeded source.
func newRegistry(t *testing.T) (*breaker.Registry, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1))), mock
}

// newReader registers src with a new SDK provider whose manual reader it
// returns; the registration is undone when the test ends.
func newReader(t *testing.T, src breaker.Source) *sdkmetric.ManualReader {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	reg, err := otelbreaker.Register(src, otelbreaker.WithMeterProvider(mp))
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Unregister() })
	return reader
}

// collect collects from reader and returns the metrics of this package's
// scope by name.
func collect(t testing.TB, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelbreaker.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

// points returns the values of m's data points by breaker name, for a sum
// or a gauge; nil for any other kind of data.
func points[N int64 | float64](m metricdata.Metrics) map[string]N {
	var dps []metricdata.DataPoint[N]
	switch d := m.Data.(type) {
	case metricdata.Sum[N]:
		dps = d.DataPoints
	case metricdata.Gauge[N]:
		dps = d.DataPoints
	default:
		return nil
	}
	got := make(map[string]N, len(dps))
	for _, dp := range dps {
		name, _ := dp.Attributes.Value(otelbreaker.BreakerKey)
		got[name.AsString()] = dp.Value
	}
	return got
}

// record reports accepts successes and then failures failures through b,
// each admitted first; it fails the test if b drops one.
func record(t *testing.T, b breaker.Breaker, accepts, failures int) {
	t.Helper()
	for i := range accepts + failures {
		p, err := b.Allow()
		require.NoError(t, err)
		if i < accepts {
			p.Accept()
		} else {
			p.Reject("down")
		}
	}
}
