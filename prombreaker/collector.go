package prombreaker

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/srebreaker/srebreaker/breaker"
)

// Source is a set of named breakers that a [Collector] reports on.
// *[breaker.Registry] implements it; [Breakers] is one for breakers made
// with [breaker.New] outside a registry. Range calls f for each breaker and
// its name until f returns false, and may be called from many goroutines
// at once. The names must be distinct: a Prometheus registry refuses a
// scrape with two series of the same name and labels.
type Source interface {
	Range(f func(name string, b breaker.Breaker) bool)
}

// Breakers is a fixed list of breakers, a [Source] for breakers that no
// registry holds; each is reported under its [breaker.Breaker.Name], and
// nil entries are skipped:
//
//	c, err := prombreaker.NewCollector(prombreaker.Breakers{payments, search})
type Breakers []breaker.Breaker

// Range calls f for each breaker of bs that is not nil, in order, until f
// returns false.
func (bs Breakers) Range(f func(name string, b breaker.Breaker) bool) {
	for _, b := range bs {
		if b != nil && !f(b.Name(), b) {
			return
		}
	}
}

// Collector is a prometheus.Collector that reports the breakers of a
// [Source] each time it is collected (see the package documentation for
// the metrics). Breakers that do not report [breaker.Stats], such as
// [breaker.Nop] and the breakers a registry returns after
// [breaker.Registry.NoBreakerFor], are left out. Register it with
// prometheus.MustRegister or a registry of your own.
//
// A Collector is safe for concurrent use by multiple goroutines.
type Collector struct {
	src Source

	requests, accepts, failures, drops         *prometheus.Desc // counters
	probability                                *prometheus.Desc // gauge
	windowAccepts, windowFailures, windowDrops *prometheus.Desc // gauges
}

// NewCollector returns a collector over src, usually a *[breaker.Registry].
// It returns an error wrapping [ErrInvalidOption] if src is nil or an
// option is invalid; the text names the option and the value.
func NewCollector(src Source, opts ...Option) (*Collector, error) {
	if r, ok := src.(*breaker.Registry); src == nil || ok && r == nil {
		return nil, fmt.Errorf("%w: NewCollector(nil): the source of breakers must not be nil", ErrInvalidOption)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", name), help,
			[]string{BreakerLabel}, o.labels)
	}
	return &Collector{
		src: src,
		requests: desc("requests_total",
			"Calls that asked the breaker: those it admitted that succeeded or failed, and those it dropped."),
		accepts: desc("accepts_total",
			"Calls the breaker admitted that succeeded."),
		failures: desc("failures_total",
			"Calls the breaker admitted that failed."),
		drops: desc("drops_total",
			"Calls the breaker dropped without running them; an estimate, one drop in 8 being counted as 8."),
		probability: desc("drop_probability",
			"Probability that a call asking the breaker now is dropped, from 0 (healthy) to 1."),
		windowAccepts: desc("window_accepts",
			"Admitted calls that succeeded within the breaker's rolling window."),
		windowFailures: desc("window_failures",
			"Admitted calls that failed within the breaker's rolling window."),
		windowDrops: desc("window_drops",
			"Calls dropped within the breaker's rolling window; an estimate, one drop in 8 being counted as 8."),
	}, nil
}

// MustNewCollector is like [NewCollector] but panics if src is nil or an
// option is invalid, for collectors made from literals in code:
//
//	prometheus.MustRegister(prombreaker.MustNewCollector(registry))
func MustNewCollector(src Source, opts ...Option) *Collector {
	c, err := NewCollector(src, opts...)
	if err != nil {
		panic(err.Error())
	}
	return c
}

// Describe sends the descriptions of the collector's eight metrics, as
// prometheus.Collector requires.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

// descs lists the collector's descriptions in the order Collect sends them.
func (c *Collector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.requests, c.accepts, c.failures, c.drops,
		c.probability, c.windowAccepts, c.windowFailures, c.windowDrops}
}

// Collect sends a sample of each metric for each breaker of the source that
// reports [breaker.Stats], as prometheus.Collector requires. Taking a
// breaker's snapshot holds its window's lock for a moment and never delays
// its calls for longer.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.src.Range(func(name string, b breaker.Breaker) bool {
		s, ok := breaker.StatsOf(b)
		if !ok {
			return true
		}
		// A label value must be valid UTF-8, and a breaker's name need not
		// be; with the name made valid, MustNewConstMetric cannot panic.
		name = strings.ToValidUTF8(name, "\uFFFD")
		send := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(d, t, v, name)
		}
		send(c.requests, prometheus.CounterValue, float64(s.TotalSuccesses+s.TotalFailures+s.TotalDrops))
		send(c.accepts, prometheus.CounterValue, float64(s.TotalSuccesses))
		send(c.failures, prometheus.CounterValue, float64(s.TotalFailures))
		send(c.drops, prometheus.CounterValue, float64(s.TotalDrops))
		send(c.probability, prometheus.GaugeValue, s.DropProbability)
		send(c.windowAccepts, prometheus.GaugeValue, float64(s.Successes))
		send(c.windowFailures, prometheus.GaugeValue, float64(s.Failures))
		send(c.windowDrops, prometheus.GaugeValue, float64(s.Drops))
		return true
	})
}

var _ prometheus.Collector = (*Collector)(nil)
