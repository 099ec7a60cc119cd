package otelbreaker

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/distinct"
)

// ScopeName is the name of the Meter that [Register] creates the
// instruments with: this module's path, the instrumentation scope that
// exporters show and views select.
const ScopeName = "github.com/srebreaker/srebreaker/otelbreaker"

// BreakerKey is the key of the attribute that holds a breaker's name on
// every data point: the name the [breaker.Source] gives it, which for a
// *[breaker.Registry] is the name given to Get. A name that is not valid
// UTF-8 has each invalid byte written as \xNN, and a value that two
// breakers would share gets " (2)", " (3)" and so on, so that one odd name
// never fails an export or merges two breakers.
const BreakerKey attribute.Key = "breaker"

// CriticalityKey is the key of the attribute that holds the level, as
// `criticality.Level.String` names it (CRITICAL_PLUS, CRITICAL,
// SHEDDABLE_PLUS or SHEDDABLE), on the data points of the instruments by
// criticality; those data points also carry [BreakerKey].
const CriticalityKey attribute.Key = "criticality"

// OverrideModeKey is the key of the attribute that holds an override's
// mode, as `override.Mode.String` names it (shed_all or
// shed_none), on the data points of srebreaker.override; those data points
// also carry [BreakerKey]. An override's reason and author are free text
// and never attributes.
const OverrideModeKey attribute.Key = "mode"

// Register creates the instruments listed in the package documentation
// with a Meter named [ScopeName] from the meter provider (see
// [WithMeterProvider]), and a callback that observes the breakers of src
// each time the provider collects: usually a *[breaker.Registry], such as
// [breaker.DefaultRegistry], or a type of your own with a Range method. Breakers added to
// a registry later are reported from the next collection on. Range is
// called once per collection, from the goroutine that collects.
//
// Call Unregister on the returned registration to stop the observations;
// the instruments stay with the provider, without data points. Several
// sources can be registered with one provider, each once, as long as their
// breakers' names differ: two registrations observe on their own, and the
// SDK adds up their observations of the same name.
//
// The error wraps [ErrInvalidOption] for an invalid option or a nil src;
// otherwise it wraps the provider's error for an instrument or the
// callback it could not create, and names which.
func Register(src breaker.Source, opts ...Option) (metric.Registration, error) {
	if r, ok := src.(*breaker.Registry); src == nil || ok && r == nil {
		return nil, fmt.Errorf("%w: Register(nil): the source of breakers must not be nil", ErrInvalidOption)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	meter := o.provider.Meter(ScopeName)
	ins, err := newInstruments(meter)
	if err != nil {
		return nil, err
	}
	reg, err := meter.RegisterCallback(ins.observe(src),
		ins.requests, ins.successes, ins.failures, ins.drops, ins.dropProbability,
		ins.levelRequests, ins.levelSuccesses, ins.levelFailures, ins.levelDrops, ins.levelDropProbability,
		ins.override)
	if err != nil {
		return nil, fmt.Errorf("otelbreaker: registering the callback: %w", err)
	}
	return reg, nil
}

// instruments are the asynchronous instruments of one registration.
type instruments struct {
	requests, successes, failures, drops metric.Int64ObservableCounter
	dropProbability                      metric.Float64ObservableGauge

	// By criticality, for breakers that have counted a call at a level
	// other than the default (breaker.Stats.Leveled).
	levelRequests, levelSuccesses, levelFailures, levelDrops metric.Int64ObservableCounter
	levelDropProbability                                     metric.Float64ObservableGauge

	// 1 while an operator's override is in force, with its mode.
	override metric.Int64ObservableGauge
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var ins instruments
	counters := []struct {
		dst         *metric.Int64ObservableCounter
		name, descr string
	}{
		{&ins.requests, "srebreaker.requests",
			"Calls that asked the breaker: admitted calls that succeeded or failed, and dropped calls."},
		{&ins.successes, "srebreaker.successes", "Calls the breaker admitted that succeeded."},
		{&ins.failures, "srebreaker.failures", "Calls the breaker admitted that failed."},
		{&ins.drops, "srebreaker.drops",
			"Calls the breaker dropped."},
		{&ins.levelRequests, "srebreaker.requests_by_criticality",
			"Calls that asked the breaker at a criticality: admitted calls that succeeded or failed, and dropped calls."},
		{&ins.levelSuccesses, "srebreaker.successes_by_criticality",
			"Calls the breaker admitted at a criticality that succeeded."},
		{&ins.levelFailures, "srebreaker.failures_by_criticality",
			"Calls the breaker admitted at a criticality that failed."},
		{&ins.levelDrops, "srebreaker.drops_by_criticality", "Calls the breaker dropped at a criticality."},
	}
	for _, c := range counters {
		var err error
		*c.dst, err = m.Int64ObservableCounter(c.name, metric.WithDescription(c.descr), metric.WithUnit("{call}"))
		if err != nil {
			return nil, fmt.Errorf("otelbreaker: creating %s: %w", c.name, err)
		}
	}
	var err error
	ins.dropProbability, err = m.Float64ObservableGauge("srebreaker.drop_probability",
		metric.WithDescription("Probability that a call asking the breaker now is dropped: 0 while the dependency is healthy."),
		metric.WithUnit("1"))
	if err != nil {
		return nil, fmt.Errorf("otelbreaker: creating srebreaker.drop_probability: %w", err)
	}
	ins.levelDropProbability, err = m.Float64ObservableGauge("srebreaker.drop_probability_by_criticality",
		metric.WithDescription("Probability that a call asking the breaker now at a criticality is dropped: "+
			"0 while the dependency is healthy."),
		metric.WithUnit("1"))
	if err != nil {
		return nil, fmt.Errorf("otelbreaker: creating srebreaker.drop_probability_by_criticality: %w", err)
	}
	ins.override, err = m.Int64ObservableGauge("srebreaker.override",
		metric.WithDescription("1 while an operator's override is in force on the breaker, with its mode "+
			"(shed_all or shed_none); no data point otherwise."),
		metric.WithUnit("1"))
	if err != nil {
		return nil, fmt.Errorf("otelbreaker: creating srebreaker.override: %w", err)
	}
	return &ins, nil
}

// observe returns the callback that reports the breakers of src. It runs
// on collection only, never on a breaker's call path.
func (ins *instruments) observe(src breaker.Source) metric.Callback {
	return func(_ context.Context, o metric.Observer) error {
		var names []string
		var stats []breaker.Stats
		src.Range(func(name string, b breaker.Breaker) bool {
			if s := b.Stats(); !s.Unguarded { // not a Nop breaker
				names, stats = append(names, name), append(stats, s)
			}
			return true
		})
		for i, value := range distinct.Names(names) {
			s := stats[i]
			attrs := metric.WithAttributeSet(attribute.NewSet(BreakerKey.String(value)))
			o.ObserveInt64(ins.requests, s.TotalSuccesses+s.TotalFailures+s.TotalDrops, attrs)
			o.ObserveInt64(ins.successes, s.TotalSuccesses, attrs)
			o.ObserveInt64(ins.failures, s.TotalFailures, attrs)
			o.ObserveInt64(ins.drops, s.TotalDrops, attrs)
			o.ObserveFloat64(ins.dropProbability, s.DropProbability, attrs)
			if ov := s.Override; ov != nil {
				o.ObserveInt64(ins.override, 1, metric.WithAttributeSet(attribute.NewSet(BreakerKey.String(value),
					OverrideModeKey.String(ov.Mode.String()))))
			}
			if !s.Leveled() {
				continue
			}
			for _, l := range s.Criticalities {
				attrs := metric.WithAttributeSet(attribute.NewSet(BreakerKey.String(value),
					CriticalityKey.String(l.Level.String())))
				o.ObserveInt64(ins.levelRequests, l.TotalSuccesses+l.TotalFailures+l.TotalDrops, attrs)
				o.ObserveInt64(ins.levelSuccesses, l.TotalSuccesses, attrs)
				o.ObserveInt64(ins.levelFailures, l.TotalFailures, attrs)
				o.ObserveInt64(ins.levelDrops, l.TotalDrops, attrs)
				o.ObserveFloat64(ins.levelDropProbability, l.DropProbability, attrs)
			}
		}
		return nil
	}
}
