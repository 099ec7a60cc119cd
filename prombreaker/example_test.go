package prombreaker_test

import (
	"fmt"
	"os"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/prombreaker"
)

func Example() {
	// A mock clock and a seeded random source make the output reproducible;
	// real code leaves both at their defaults.
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	// Usually prometheus.MustRegister(prombreaker.MustNewCollector(
	// breaker.DefaultRegistry())), served by promhttp.Handler().
	reg := prometheus.NewRegistry()
	reg.MustRegister(prombreaker.MustNewCollector(registry))

	payments := registry.Get("payments")
	dropped := 0
	for i := range 100 { // 100 calls, and the dependency fails from the 41st on
		promise, err := payments.Allow()
		if err != nil {
			dropped++
			continue
		}
		if i < 40 {
			promise.Accept()
		} else {
			promise.Reject("timeout")
		}
	}

	fmt.Println("calls dropped:", dropped)
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range families {
		switch mf.GetName() {
		case "srebreaker_successes_total", "srebreaker_failures_total", "srebreaker_drops_total",
			"srebreaker_drop_probability":
			if _, err := expfmt.MetricFamilyToText(os.Stdout, mf); err != nil {
				panic(err)
			}
		}
	}
	// Output:
	// calls dropped: 11
	// # HELP srebreaker_drop_probability Probability that a call asking the breaker now is dropped, from 0 (healthy) to 1.
	// # TYPE srebreaker_drop_probability gauge
	// srebreaker_drop_probability{breaker="payments"} 0.4933605812101631
	// # HELP srebreaker_drops_total Calls the breaker dropped without running them.
	// # TYPE srebreaker_drops_total counter
	// srebreaker_drops_total{breaker="payments"} 11
	// # HELP srebreaker_failures_total Calls the breaker admitted that failed.
	// # TYPE srebreaker_failures_total counter
	// srebreaker_failures_total{breaker="payments"} 49
	// # HELP srebreaker_successes_total Calls the breaker admitted that succeeded.
	// # TYPE srebreaker_successes_total counter
	// srebreaker_successes_total{breaker="payments"} 40
}
