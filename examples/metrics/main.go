// Command metrics serves a breaker's Prometheus metrics over HTTP on
// loopback while a simulated dependency is healthy, fails and heals, and
// prints what its own scrapes of /metrics show: the drop probability rising
// while the dependency fails and falling once it heals, then the scraped
// metrics of the breaker at the end.
//
// The dependency is a function in this process that fails while it is
// down; calls reach it through a breaker of a [breaker.Registry], which a
// [prombreaker.Collector] exports on http://127.0.0.1:PORT/metrics (-addr;
// by default the system picks the port). By default the breaker reads a
// virtual clock that each call moves forward by 1/rate, so five seconds of
// traffic run in a fraction of one; with -realtime it reads the system
// clock and the calls are paced for real, so that the endpoint can be
// watched with curl or scraped by a Prometheus server while it runs (raise
// -after to keep it up longer). It is a module of its own, because it
// needs the Prometheus client:
//
//	cd examples/metrics && go run .
//	cd examples/metrics && go run . -realtime -addr 127.0.0.1:9464 -after 60s
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/prombreaker"
)

// name is the breaker's name, the value of its series' breaker label.
const name = "inventory"

type config struct {
	addr     string        // where /metrics is served
	rate     int           // calls per second
	healthy  time.Duration // before the dependency fails
	down     time.Duration // how long it fails
	after    time.Duration // after it heals
	every    time.Duration // between two scrapes
	realtime bool
	seed     uint64
}

func defaultConfig() config {
	return config{addr: "127.0.0.1:0", rate: 200, healthy: time.Second, down: 2 * time.Second,
		after: 2 * time.Second, every: 250 * time.Millisecond, seed: 1}
}

func main() {
	cfg := defaultConfig()
	flag.StringVar(&cfg.addr, "addr", cfg.addr, "address to serve /metrics on")
	flag.IntVar(&cfg.rate, "rate", cfg.rate, "calls per second (1 to 10000)")
	flag.DurationVar(&cfg.healthy, "healthy", cfg.healthy, "time before the dependency starts failing")
	flag.DurationVar(&cfg.down, "down", cfg.down, "time the dependency fails")
	flag.DurationVar(&cfg.after, "after", cfg.after, "time after the dependency heals")
	flag.DurationVar(&cfg.every, "every", cfg.every, "time between two scrapes of /metrics")
	flag.BoolVar(&cfg.realtime, "realtime", false, "use the system clock and pace calls for real")
	flag.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the breaker's random source")
	flag.Parse()
	if _, err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		os.Exit(1)
	}
}

// dependency fails while down is set.
type dependency struct{ down atomic.Bool }

var errDown = errors.New("inventory: down")

func (d *dependency) call() error {
	if d.down.Load() {
		return errDown
	}
	return nil
}

// virtualClock is moved by hand, one call at a time.
type virtualClock struct {
	clock.Clock // nil: breakers read Now alone
	now         atomic.Int64
}

func (c *virtualClock) Now() time.Time { return time.Unix(0, c.now.Load()) }

// scrape is what one scrape of /metrics said about the breaker, and when
// and in which state of the dependency it was taken.
type scrape struct {
	at                              time.Duration
	down                            bool
	line                            string // the drop probability's line, as served
	probability                     float64
	requests, successes, failures   float64
	drops                           float64
	windowSuccesses, windowFailures float64
}

// report is what a run saw: the scrapes, the calls made and shed, and the
// breaker's lines of the last scrape.
type report struct {
	url     string
	scrapes []scrape
	sent    int // calls that reached the dependency
	shed    int // calls the breaker dropped
	final   []string
}

// run serves /metrics, makes the calls, scrapes /metrics every cfg.every
// and prints what the scrapes show.
func run(ctx context.Context, cfg config, out io.Writer) (*report, error) {
	switch {
	case cfg.rate < 1 || cfg.rate > 10000:
		return nil, fmt.Errorf("-rate %d: must be between 1 and 10000", cfg.rate)
	case cfg.healthy < 0 || cfg.down < 0 || cfg.after < 0:
		return nil, errors.New("-healthy, -down and -after must not be negative")
	case cfg.every <= 0:
		return nil, fmt.Errorf("-every %v: must be positive", cfg.every)
	}

	opts := []breaker.Option{breaker.WithProba(proba.NewSeeded(cfg.seed))}
	vclock := &virtualClock{}
	vclock.now.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	if !cfg.realtime {
		opts = append(opts, breaker.WithClock(vclock))
	}
	registry := breaker.MustNewRegistry(opts...)

	// A program would leave its breakers in breaker.DefaultRegistry(), write
	// prometheus.MustRegister(prombreaker.MustNewCollector(
	// breaker.DefaultRegistry())) and serve promhttp.Handler(), as the
	// docs/guide/observability.md shows; registries of the run's own keep it repeatable.
	reg := prometheus.NewRegistry()
	reg.MustRegister(prombreaker.MustNewCollector(registry))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	rep := &report{url: "http://" + ln.Addr().String() + "/metrics"}
	client := &http.Client{Timeout: 5 * time.Second}
	fmt.Fprintf(out, "serving %s\nthe dependency is healthy for %v, fails for %v, then is healthy for %v; %d calls/s",
		rep.url, cfg.healthy, cfg.down, cfg.after, cfg.rate)
	if !cfg.realtime {
		fmt.Fprintf(out, " on a virtual clock")
	}
	fmt.Fprintf(out, "\n\n%6s  %-10s  %s\n", "time", "dependency", "scraped from /metrics")

	dep := &dependency{}
	b := registry.Get(name)
	total := cfg.healthy + cfg.down + cfg.after
	step := time.Second / time.Duration(cfg.rate)
	begin := time.Now()
	for at := time.Duration(0); at < total; at += step {
		dep.down.Store(at >= cfg.healthy && at < cfg.healthy+cfg.down)
		if cfg.realtime {
			time.Sleep(time.Until(begin.Add(at)))
		}
		if err := b.Do(dep.call); errors.Is(err, breaker.ErrServiceUnavailable) {
			rep.shed++
		} else {
			rep.sent++
		}
		if !cfg.realtime {
			vclock.now.Add(int64(step))
		}
		if next := at + step; next/cfg.every != at/cfg.every {
			s, _, err := scrapeOnce(ctx, client, rep.url)
			if err != nil {
				return nil, err
			}
			s.at, s.down = next, dep.down.Load()
			state := "up"
			if s.down {
				state = "down"
			}
			fmt.Fprintf(out, "%5.2fs  %-10s  %s\n", s.at.Seconds(), state, s.line)
			rep.scrapes = append(rep.scrapes, s)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}

	_, lines, err := scrapeOnce(ctx, client, rep.url)
	if err != nil {
		return nil, err
	}
	rep.final = lines
	fmt.Fprintf(out, "\n%d calls reached the dependency and the breaker shed %d; the last scrape said:\n\n%s\n",
		rep.sent, rep.shed, strings.Join(lines, "\n"))
	return rep, nil
}

// scrapeOnce gets /metrics from url and returns what it says about the
// breaker: the values, parsed, and the lines of its families as served.
func scrapeOnce(ctx context.Context, client *http.Client, url string) (scrape, []string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return scrape{}, nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := client.Do(req)
	if err != nil {
		return scrape{}, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return scrape{}, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return scrape{}, nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}

	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return scrape{}, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	value := func(family string) float64 {
		for _, m := range families[family].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == prombreaker.BreakerLabel && l.GetValue() == name {
					if c := m.GetCounter(); c != nil {
						return c.GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
		return 0
	}
	s := scrape{
		probability:     value("srebreaker_drop_probability"),
		requests:        value("srebreaker_requests_total"),
		successes:       value("srebreaker_successes_total"),
		failures:        value("srebreaker_failures_total"),
		drops:           value("srebreaker_drops_total"),
		windowSuccesses: value("srebreaker_window_successes"),
		windowFailures:  value("srebreaker_window_failures"),
	}

	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE "), "srebreaker_") {
			lines = append(lines, line)
		}
		if strings.HasPrefix(line, "srebreaker_drop_probability{") {
			s.line = line
		}
	}
	return s, lines, sc.Err()
}
