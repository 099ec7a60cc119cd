package prombreaker

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/distinct"
)

// Sources names several sources of breakers for one [Collector], such as
// two registries, so that a single Prometheus registry exports them all:
//
//	prombreaker.MustNewCollector(prombreaker.Sources{
//		"default": breaker.DefaultRegistry(),
//		"batch":   batchRegistry,
//	})
//
// A Collector over Sources labels each series with the breaker's name
// ([BreakerLabel]) and the name of its source ([SourceLabel]), so that
// breakers of the same name in two sources stay apart. Source names must
// not be empty and sources must not be nil; [NewCollector] says which one
// is wrong.
//
// Sources is itself a [breaker.Source], for other readers: its Range calls
// f for each breaker of each source, sources in the order of their names,
// under the source's name, a slash and the breaker's name
// ("batch/payments").
type Sources map[string]breaker.Source

// Range calls f for each breaker of each source, in the order of the
// sources' names, as "source/breaker", until f returns false.
func (s Sources) Range(f func(name string, b breaker.Breaker) bool) {
	for _, name := range slices.Sorted(maps.Keys(s)) {
		more := true
		s[name].Range(func(bn string, b breaker.Breaker) bool {
			more = f(name+"/"+bn, b)
			return more
		})
		if !more {
			return
		}
	}
}

// source is one source of a Collector and the value of its SourceLabel.
type source struct {
	name string // "" when the collector has a single source and no SourceLabel
	src  breaker.Source
}

// Collector is a prometheus.Collector that reports the breakers of a
// [breaker.Source] each time it is collected (see the package documentation
// for the metrics). Breakers that do not report [breaker.Stats], such as
// [breaker.Nop] and the breakers a registry returns after
// [breaker.Registry.NoBreakerFor], are left out. Register it with
// prometheus.MustRegister or a registry of your own.
//
// A Prometheus registry takes one Collector with the default options: a
// second one describes the same metrics and is refused. To export several
// sources, give one Collector [Sources]; two Collectors with the same
// constant label names but different values ([WithConstLabels]) can also
// share a Prometheus registry.
//
// A Collector is safe for concurrent use by multiple goroutines.
type Collector struct {
	sources []source // in the order of their names

	requests, successes, failures, drops         *prometheus.Desc // counters
	probability                                  *prometheus.Desc // gauge
	windowSuccesses, windowFailures, windowDrops *prometheus.Desc // gauges

	// By criticality, for breakers that have counted a call at a level
	// other than the default (breaker.Stats.Leveled).
	levelRequests, levelSuccesses, levelFailures, levelDrops *prometheus.Desc // counters
	levelProbability                                         *prometheus.Desc // gauge

	// 1 while an operator's override is in force, labelled with its mode.
	override *prometheus.Desc // gauge

	// The overload limit of a server guarded under the breaker's name, for
	// breakers that have one (breaker.Stats.Overload).
	overloadLimit, overloadInFlight, overloadQueued, overloaded, queueHeld *prometheus.Desc // gauges
	overloadRejections                                                     *prometheus.Desc // counter, by criticality
}

// overloadLevels are the levels of breaker.OverloadStats.Rejected, in its
// order: highest first.
var overloadLevels = [len(breaker.OverloadStats{}.Rejected)]string{
	criticality.CriticalPlus.String(), criticality.Critical.String(),
	criticality.SheddablePlus.String(), criticality.Sheddable.String(),
}

// NewCollector returns a collector over src: usually
// [breaker.DefaultRegistry], which holds the breakers of the package-level
// functions and of httpbreaker's and grpcbreaker's defaults, another
// *[breaker.Registry], a type of your own with a Range method, or [Sources] for several
// of them. It returns an error wrapping [ErrInvalidOption] if src is nil,
// holds a nil source or a source without a name, or an option is invalid;
// the text names the option and the value.
func NewCollector(src breaker.Source, opts ...Option) (*Collector, error) {
	if isNil(src) {
		return nil, fmt.Errorf("%w: NewCollector(nil): the source of breakers must not be nil", ErrInvalidOption)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	variable := []string{BreakerLabel}
	sources := []source{{src: src}}
	if ss, ok := src.(Sources); ok {
		if v, ok := o.labels[SourceLabel]; ok {
			return nil, fmt.Errorf("%w: WithConstLabels(%q=%q): a collector over Sources sets %q to each source's name",
				ErrInvalidOption, SourceLabel, v, SourceLabel)
		}
		variable = append(variable, SourceLabel)
		sources = sources[:0]
		for _, name := range slices.Sorted(maps.Keys(ss)) {
			switch {
			case name == "":
				return nil, fmt.Errorf("%w: NewCollector(Sources{%q: …}): a source's name must not be empty",
					ErrInvalidOption, name)
			case !utf8.ValidString(name):
				return nil, fmt.Errorf("%w: NewCollector(Sources{%q: …}): a source's name must be valid UTF-8",
					ErrInvalidOption, name)
			case isNil(ss[name]):
				return nil, fmt.Errorf("%w: NewCollector(Sources{%q: nil}): a source must not be nil",
					ErrInvalidOption, name)
			}
			sources = append(sources, source{name: name, src: ss[name]})
		}
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", name), help, variable, o.labels)
	}
	leveled := append(slices.Clone(variable), CriticalityLabel)
	levelDesc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", name), help, leveled, o.labels)
	}
	moded := append(slices.Clone(variable), OverrideModeLabel)
	return &Collector{
		sources: sources,
		override: prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", "override"),
			"1 while an operator's override is in force on the breaker, labelled with its mode (shed_all or shed_none); "+
				"absent otherwise.", moded, o.labels),
		requests: desc("requests_total",
			"Calls that asked the breaker: those it admitted that succeeded or failed, and those it dropped."),
		successes: desc("successes_total",
			"Calls the breaker admitted that succeeded."),
		failures: desc("failures_total",
			"Calls the breaker admitted that failed."),
		drops: desc("drops_total",
			"Calls the breaker dropped without running them."),
		probability: desc("drop_probability",
			"Probability that a call asking the breaker now is dropped, from 0 (healthy) to 1."),
		windowSuccesses: desc("window_successes",
			"Admitted calls that succeeded within the breaker's rolling window."),
		windowFailures: desc("window_failures",
			"Admitted calls that failed within the breaker's rolling window."),
		windowDrops: desc("window_drops",
			"Calls dropped within the breaker's rolling window."),
		levelRequests: levelDesc("requests_by_criticality_total",
			"Calls that asked the breaker at a criticality: those it admitted that succeeded or failed, and those it dropped."),
		levelSuccesses: levelDesc("successes_by_criticality_total",
			"Calls the breaker admitted at a criticality that succeeded."),
		levelFailures: levelDesc("failures_by_criticality_total",
			"Calls the breaker admitted at a criticality that failed."),
		levelDrops: levelDesc("drops_by_criticality_total",
			"Calls the breaker dropped at a criticality without running them."),
		levelProbability: levelDesc("drop_probability_by_criticality",
			"Probability that a call asking the breaker now at a criticality is dropped, from 0 (healthy) to 1."),
		overloadLimit: desc("overload_limit",
			"Calls the server guarded under the breaker's name lets into its handlers at once, as its overload limit learned it."),
		overloadInFlight: desc("overload_in_flight",
			"Calls in the handlers of the server guarded under the breaker's name."),
		overloadQueued: desc("overload_queued",
			"Calls waiting for room in the handlers of the server guarded under the breaker's name."),
		overloaded: desc("overloaded",
			"1 while calls arrive at the server guarded under the breaker's name faster than its handlers serve them, 0 otherwise."),
		queueHeld: desc("overload_queue_held",
			"1 while, not overloaded, the server guarded under the breaker's name holds its standing queue short and rejects the excess, 0 otherwise."),
		overloadRejections: levelDesc("overload_rejections_total",
			"Calls at a criticality that the server guarded under the breaker's name rejected for want of room."),
	}, nil
}

// isNil tells a nil source, or a nil registry in a non-nil interface.
func isNil(src breaker.Source) bool {
	r, ok := src.(*breaker.Registry)
	return src == nil || ok && r == nil
}

// MustNewCollector is like [NewCollector] but panics, with the message
// NewCollector would return, when src or an option is invalid, for
// collectors made from literals in code:
//
//	prometheus.MustRegister(prombreaker.MustNewCollector(breaker.DefaultRegistry()))
func MustNewCollector(src breaker.Source, opts ...Option) *Collector {
	c, err := NewCollector(src, opts...)
	if err != nil {
		panic(err.Error())
	}
	return c
}

// Describe sends the descriptions of the collector's nineteen metrics, as
// prometheus.Collector requires.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

// descs lists the collector's descriptions in the order Collect sends them.
func (c *Collector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.requests, c.successes, c.failures, c.drops,
		c.probability, c.windowSuccesses, c.windowFailures, c.windowDrops,
		c.levelRequests, c.levelSuccesses, c.levelFailures, c.levelDrops, c.levelProbability, c.override,
		c.overloadLimit, c.overloadInFlight, c.overloadQueued, c.overloaded, c.queueHeld, c.overloadRejections}
}

// Collect sends a sample of each metric for each breaker of the source that
// reports [breaker.Stats], as prometheus.Collector requires. Taking a
// breaker's snapshot holds its window's lock for a moment and never delays
// its calls for longer.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	type reported struct {
		name  string
		stats breaker.Stats
	}
	for _, src := range c.sources {
		var all []reported
		src.src.Range(func(name string, b breaker.Breaker) bool {
			if s := b.Stats(); !s.Unguarded {
				all = append(all, reported{name, s})
			}
			return true
		})
		names := make([]string, len(all))
		for i, r := range all {
			names[i] = r.name
		}
		// Label values must be valid UTF-8 and tell the series apart; a
		// breaker's name need not be valid, and two names may escape
		// alike: labels makes each value valid and distinct, so
		// MustNewConstMetric cannot panic and the scrape cannot fail.
		// Source names were checked by NewCollector.
		for i, label := range distinct.Names(names) {
			values := []string{label}
			if src.name != "" {
				values = append(values, src.name)
			}
			s := all[i].stats
			send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, values ...string) {
				ch <- prometheus.MustNewConstMetric(d, t, v, values...)
			}
			send(c.requests, prometheus.CounterValue, float64(s.TotalSuccesses+s.TotalFailures+s.TotalDrops), values...)
			send(c.successes, prometheus.CounterValue, float64(s.TotalSuccesses), values...)
			send(c.failures, prometheus.CounterValue, float64(s.TotalFailures), values...)
			send(c.drops, prometheus.CounterValue, float64(s.TotalDrops), values...)
			send(c.probability, prometheus.GaugeValue, s.DropProbability, values...)
			send(c.windowSuccesses, prometheus.GaugeValue, float64(s.Successes), values...)
			send(c.windowFailures, prometheus.GaugeValue, float64(s.Failures), values...)
			send(c.windowDrops, prometheus.GaugeValue, float64(s.Drops), values...)
			if o := s.Override; o != nil { // the mode alone: reason and author are free text, never labels
				send(c.override, prometheus.GaugeValue, 1, append(slices.Clone(values), o.Mode.String())...)
			}
			if o := s.Overload; o != nil {
				send(c.overloadLimit, prometheus.GaugeValue, o.Limit, values...)
				send(c.overloadInFlight, prometheus.GaugeValue, float64(o.InFlight), values...)
				send(c.overloadQueued, prometheus.GaugeValue, float64(o.Queued), values...)
				send(c.overloaded, prometheus.GaugeValue, gauge(o.Overloaded), values...)
				send(c.queueHeld, prometheus.GaugeValue, gauge(o.QueueHeld), values...)
				for i, n := range o.Rejected {
					send(c.overloadRejections, prometheus.CounterValue, float64(n),
						append(slices.Clone(values), overloadLevels[i])...)
				}
			}
			if !s.Leveled() {
				continue
			}
			for _, l := range s.Criticalities {
				lv := append(slices.Clone(values), l.Level.String())
				send(c.levelRequests, prometheus.CounterValue, float64(l.TotalSuccesses+l.TotalFailures+l.TotalDrops), lv...)
				send(c.levelSuccesses, prometheus.CounterValue, float64(l.TotalSuccesses), lv...)
				send(c.levelFailures, prometheus.CounterValue, float64(l.TotalFailures), lv...)
				send(c.levelDrops, prometheus.CounterValue, float64(l.TotalDrops), lv...)
				send(c.levelProbability, prometheus.GaugeValue, l.DropProbability, lv...)
			}
		}
	}
}

// gauge is 1 for true, 0 for false.
func gauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ prometheus.Collector = (*Collector)(nil)
