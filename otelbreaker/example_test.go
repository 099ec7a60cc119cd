package otelbreaker_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/benbjohnson/clock"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/otelbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

func Example() {
	// A mock clock and a seeded random source make the output
	// reproducible; real code leaves both at their defaults.
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	// A manual reader stands in for an exporter, such as OTLP's or
	// Prometheus's, attached to the provider.
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	reg, err := otelbreaker.Register(registry, otelbreaker.WithMeterProvider(provider))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister() // stops the observations; the SDK's never fails

	b := registry.Get("payments")
	for i := range 4 {
		promise, err := b.Allow()
		if err != nil {
			continue
		}
		if i == 3 {
			promise.Reject("timeout")
		} else {
			promise.Accept()
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					name, _ := dp.Attributes.Value(otelbreaker.BreakerKey)
					lines = append(lines, fmt.Sprintf("%s{breaker=%s} %d %s", m.Name, name.AsString(), dp.Value, m.Unit))
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					name, _ := dp.Attributes.Value(otelbreaker.BreakerKey)
					lines = append(lines, fmt.Sprintf("%s{breaker=%s} %g %s", m.Name, name.AsString(), dp.Value, m.Unit))
				}
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// srebreaker.drop_probability{breaker=payments} 0 1
	// srebreaker.drops{breaker=payments} 0 {call}
	// srebreaker.failures{breaker=payments} 1 {call}
	// srebreaker.requests{breaker=payments} 4 {call}
	// srebreaker.successes{breaker=payments} 3 {call}
}
