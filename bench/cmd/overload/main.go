// Command overload puts a server with more traffic than it can serve side
// by side with the peers' answers to it (issue 41), and prints a table per
// scenario.
//
// The workload: a resource of W slots × service time S, in front of it a
// naive handler that waits for a free slot however long it takes, holds it
// for S (time.Sleep, shortened by the timer's overrun measured on the
// idle machine before each run, so that a hold takes S) and answers 200
// OK, even when its caller has gone (counted: "work for callers gone", for
// the calls that arrived in the measured phases, as every figure of a row).
// Its capacity is W/S calls/s; what a busy CPU adds to a hold shows in
// "a hold past S".
// Open-loop Poisson arrivals at a multiple of the capacity, each call with
// a client timeout of 1 s and a level in the criticality header
// (httpbreaker.CriticalityHeader): 10 % CRITICAL_PLUS, 40 % CRITICAL, 20 %
// SHEDDABLE_PLUS, 30 % SHEDDABLE. Randomness is seeded (-seed): every
// contender of a scenario gets the same calls, in every run of it with
// that seed.
//
// The contenders, each run in turn on a fresh resource, server and
// limiter, starting one further on with each scenario:
//
//	none               the naive handler alone
//	ours-no-limit      httpbreaker.NewHandler, TrustHeader(CRITICAL_PLUS), its overload limit off
//	static             a semaphore of W calls in flight, 503 beyond it: the true capacity
//	failsafe-adaptive  failsafe-go's adaptive limiter at its defaults, through failsafehttp (429 beyond it)
//	failsafe-priority  its PriorityLimiter at its defaults, CRITICAL_PLUS → very high … SHEDDABLE → low,
//	                   the prioritizer calibrated every 100 ms
//	ours               httpbreaker.NewHandler, TrustHeader(CRITICAL_PLUS), at its defaults (the overload limit on)
//
// The scenarios (-scenarios), W × S = 4 × 20 ms unless -w and -s say
// otherwise, one step of -step (10 s; 2 s with -quick) each, the
// transition times measured from the step in 100 ms slots (the end of the
// last slot in which the figure was out of bounds):
//
//	steady     0.5×, 0.9×, 2× and 4× the capacity (-steady sets others)
//	tails      0.9× with heavy-tailed service (lognormal, p99.9 = 50× the median, mean S), and
//	           0.9× on average with bursts of 3× for 200 ms every 2 s
//	heavy      2× and 4× with heavy-tailed service, measured as the steady rows (no goal of
//	           the issue's: what a service whose latency has a long tail gets past capacity)
//	surge      1× for half a step, then 4×: time until the rolling p99 of served calls (500 ms
//	           windows) is back within twice the unloaded p99, and stays
//	calm       4× for half a step, then 0.5×: time until the last rejection
//	halve      1.5× throughout; after half a step S doubles (capacity halves): time until the
//	           calls served in the last second (since the change at most) are 95 % of the new
//	           capacity, and stay so
//	configs    steady for each W × S of -configs (32 × 5 ms and 2 × 200 ms)
//	transport  4×, the clients calling through an httpbreaker.Transport (defaults, one breaker
//	           per host): the calls its breaker drops, those that reach the server (× capacity),
//	           and the share of capacity served end to end; measured after 2 s at 4×, as the
//	           steady rows, and from the first call (the client's breaker and the server's limit
//	           both learning the surge)
//
// The calls go over HTTP on 127.0.0.1 (net/http's server and client)
// unless a table's highest rate is above -http-max calls/s, which a
// machine of a few cores cannot drive over loopback (32 × 5 ms at 4× is
// 25,600 calls/s), or -inproc is given: then the client calls the
// handler's ServeHTTP in the process, with a minimal ResponseWriter, and
// gives up at the timeout while the handler's request context is canceled,
// as a server's is when its client hangs up. The "achieved" column is the
// rate the driver issued the calls at, × capacity, and the last its lag
// behind the schedule: a driver that did not keep up makes a row unfair.
//
// Usage, from bench/ (the peer module):
//
//	GOWORK=off go run ./cmd/overload [-quick] [-step 10s] [-seed 1] [-scenarios steady,surge,...]
//	    [-contenders none,static,...] [-w 4 -s 20ms] [-configs 32x5ms,2x200ms] [-steady 0.5,0.9,2,4]
//	    [-inproc] [-json] [-windows]
//
// make bench-overload runs it at its full settings from the repository's
// root; docs/design/benchmarks.md ("Overload: the server side against the
// peers") has a run.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "overload:", err)
		os.Exit(2)
	}
}

// shape is a resource: W slots × service time S.
type shape struct {
	w int
	s time.Duration
}

func (sh shape) capacity() float64 { return float64(sh.w) / sh.s.Seconds() }
func (sh shape) String() string    { return fmt.Sprintf("%d × %v", sh.w, sh.s) }

// parseShape reads "32x5ms".
func parseShape(v string) (shape, error) {
	w, s, ok := strings.Cut(strings.TrimSpace(v), "x")
	n, err := strconv.Atoi(w)
	d, err2 := time.ParseDuration(s)
	if !ok || err != nil || err2 != nil || n < 1 || d <= 0 {
		return shape{}, fmt.Errorf("%q: want slots x service time, such as 32x5ms", v)
	}
	return shape{n, d}, nil
}

// config is what the flags set.
type config struct {
	step, timeout time.Duration
	seed          uint64
	scenarios     []string
	contenders    []contender
	headline      shape
	configs       []shape
	steady        []float64 // the steady scenarios' offered rates, × capacity
	inproc        bool
	httpMax       float64
	json          bool
	windows       bool // print the p99 windows of scenarios timed by them
}

var groupNames = []string{"steady", "tails", "heavy", "surge", "calm", "halve", "configs", "transport"}

func parse(args []string, stderr io.Writer) (config, error) {
	cfg := config{timeout: time.Second}
	fs := flag.NewFlagSet("overload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "steps of 2 s (for a look, not for the record)")
	fs.DurationVar(&cfg.step, "step", 10*time.Second, "length of a step")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the arrivals, levels and service times")
	scenarios := fs.String("scenarios", strings.Join(groupNames, ","), "scenarios to run, in this order")
	names := fs.String("contenders", strings.Join(contenderNames(), ","), "contenders, by name")
	fs.IntVar(&cfg.headline.w, "w", 4, "slots of the resource")
	fs.DurationVar(&cfg.headline.s, "s", 20*time.Millisecond, "service time of the resource (its mean, when heavy-tailed)")
	configs := fs.String("configs", "32x5ms,2x200ms", "W x S of the configs scenario, comma-separated")
	steadyRates := fs.String("steady", "0.5,0.9,2,4", "offered rates of the steady and configs scenarios, × capacity, comma-separated")
	fs.BoolVar(&cfg.inproc, "inproc", false, "call the handlers in the process, never over HTTP")
	fs.Float64Var(&cfg.httpMax, "http-max", 3000, "highest offered rate, calls/s, of a table run over HTTP; above it, in process")
	fs.BoolVar(&cfg.json, "json", false, "print JSON in place of Markdown")
	fs.BoolVar(&cfg.windows, "windows", false, "print to stderr, for the step 1× → 4×, each 500 ms window's p99 and the calls served past the bound")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		cfg.step = 2 * time.Second
	}
	switch {
	case cfg.step < 500*time.Millisecond:
		return cfg, fmt.Errorf("-step %v: at least 500ms", cfg.step)
	case cfg.headline.w < 1 || cfg.headline.s <= 0:
		return cfg, fmt.Errorf("-w %d -s %v: at least one slot and a positive service time", cfg.headline.w, cfg.headline.s)
	}
	for _, n := range strings.Split(*scenarios, ",") {
		if !slices.Contains(groupNames, n) {
			return cfg, fmt.Errorf("-scenarios: %q is not one of %s", n, strings.Join(groupNames, ", "))
		}
		cfg.scenarios = append(cfg.scenarios, n)
	}
	for _, n := range strings.Split(*names, ",") {
		i := slices.IndexFunc(contenders, func(c contender) bool { return c.name == strings.TrimSpace(n) })
		if i < 0 {
			return cfg, fmt.Errorf("-contenders: %q is not one of %s", n, strings.Join(contenderNames(), ", "))
		}
		cfg.contenders = append(cfg.contenders, contenders[i])
	}
	for _, v := range strings.Split(*configs, ",") {
		sh, err := parseShape(v)
		if err != nil {
			return cfg, fmt.Errorf("-configs: %w", err)
		}
		cfg.configs = append(cfg.configs, sh)
	}
	for _, v := range strings.Split(*steadyRates, ",") {
		m, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(m > 0 && m <= 100) {
			return cfg, fmt.Errorf("-steady: %q: want a multiple of capacity above 0, up to 100", v)
		}
		cfg.steady = append(cfg.steady, m)
	}
	return cfg, nil
}

// scenario is one run per contender: its phases, the first of them
// measured (those before warm up), and what it times.
type scenario struct {
	label      string // the row's first cell
	phases     []phase
	measured   int
	heavy      bool
	transport  bool // the clients behind an httpbreaker Transport
	transition transition
}

func (ph phase) scaleOrOne() float64 {
	if ph.scale == 0 {
		return 1
	}
	return ph.scale
}

func (sc scenario) length() time.Duration {
	var d time.Duration
	for _, ph := range sc.phases {
		d += ph.length
	}
	return d
}

func (sc scenario) measuredPhase() int { return sc.measured }

// measuredFrom is when the measured phases begin, since the start.
func (sc scenario) measuredFrom() time.Duration {
	var d time.Duration
	for _, ph := range sc.phases[:sc.measured] {
		d += ph.length
	}
	return d
}

// scaleAt is when the service time changes, since the start, and by how
// much: 0 and 1 for never.
func (sc scenario) scaleAt() (time.Duration, float64) {
	var at time.Duration
	for _, ph := range sc.phases {
		if ph.scaleOrOne() != 1 {
			return at, ph.scaleOrOne()
		}
		at += ph.length
	}
	return 0, 1
}

// group is the scenarios of one table.
type group struct {
	title     string
	shape     shape
	scenarios []scenario
	caption   string
	behind    bool
}

// steadyWarmUp is how long a steady scenario runs at its rate before it
// is measured: the steady rows say what a server does once it has met the
// load; the surge and calm scenarios measure the change itself.
const steadyWarmUp = 2 * time.Second

func steady(step time.Duration, multiples []float64) []scenario {
	var out []scenario
	for _, m := range multiples {
		out = append(out, scenario{label: fmt.Sprintf("%g×", m), measured: 1,
			phases: []phase{{length: steadyWarmUp, multiple: m}, {length: step, multiple: m}}})
	}
	return out
}

// groups returns the tables of name.
func (cfg config) groups(name string) []group {
	step, half := cfg.step, cfg.step/2
	h := cfg.headline
	switch name {
	case "steady":
		return []group{{title: "Steady load, " + h.String(), shape: h, scenarios: steady(step, cfg.steady)}}
	case "tails":
		return []group{{title: "0.9× with heavy-tailed service, and with bursts, " + h.String(), shape: h, scenarios: []scenario{
			{label: "0.9×, heavy-tailed", phases: []phase{{length: step, multiple: 0.9}}, heavy: true},
			{label: "0.9×, bursts of 3×", phases: []phase{{length: step, multiple: 0.9,
				burst: &burst{every: 2 * time.Second, length: 200 * time.Millisecond, multiple: 3}}}},
		}}}
	case "heavy":
		var scenarios []scenario
		for _, sc := range steady(step, []float64{2, 4}) {
			sc.label, sc.heavy = sc.label+", heavy-tailed", true
			scenarios = append(scenarios, sc)
		}
		return []group{{title: "Heavy-tailed service past capacity, " + h.String(), shape: h, scenarios: scenarios}}
	case "surge":
		return []group{{title: "Step 1× → 4×, " + h.String(), shape: h, caption: "p99 back within 2× unloaded after",
			scenarios: []scenario{{label: "1× → 4×", measured: 1, transition: p99Back,
				phases: []phase{{length: half, multiple: 1}, {length: step, multiple: 4}}}}}}
	case "calm":
		return []group{{title: "Step 4× → 0.5×, " + h.String(), shape: h, caption: "rejections stop after",
			scenarios: []scenario{{label: "4× → 0.5×", measured: 1, transition: rejectionsStop,
				phases: []phase{{length: half, multiple: 4}, {length: step, multiple: 0.5}}}}}}
	case "halve":
		return []group{{title: "Capacity halves (S doubles) at 1.5×, " + h.String(), shape: h,
			caption: "95 % of the new capacity served after",
			scenarios: []scenario{{label: "1.5×, S → 2S", measured: 1, transition: capacityServed,
				phases: []phase{{length: half, multiple: 1.5}, {length: step, multiple: 1.5, scale: 2}}}}}}
	case "configs":
		var out []group
		for _, sh := range cfg.configs {
			out = append(out, group{title: "Steady load, " + sh.String(), shape: sh, scenarios: steady(step, cfg.steady)})
		}
		return out
	case "transport":
		return []group{{title: "4×, clients behind our Transport, " + h.String(), shape: h, behind: true,
			scenarios: []scenario{
				{label: "4×", transport: true, measured: 1,
					phases: []phase{{length: steadyWarmUp, multiple: 4}, {length: step, multiple: 4}}},
				{label: "4×, from the first call", transport: true, phases: []phase{{length: step, multiple: 4}}},
			}}}
	}
	return nil
}

// peakRate is the highest rate, calls/s, that g offers.
func (g group) peakRate() float64 {
	peak := 0.0
	for _, sc := range g.scenarios {
		for _, s := range segments(sc.phases, g.shape.capacity()) {
			peak = max(peak, s.rate)
		}
	}
	return peak
}

// machine describes where the run ran.
type machine struct {
	CPU         string `json:"cpu"`
	CPUs        int    `json:"cpus"`
	ClockSource string `json:"clocksource"`
	Go          string `json:"go"`
}

func thisMachine() machine {
	m := machine{CPU: "unknown", CPUs: runtime.NumCPU(), ClockSource: "unknown", Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		m.ClockSource = strings.TrimSpace(string(b))
	}
	return m
}

// unloadedLength is how long the naive handler alone runs at 0.5× to find
// a resource's unloaded p99: a step, up to 2 s, or as long as
// unloadedCalls take, whichever is longer. A p99 of fewer calls is their
// slowest but one or two, below the p99 of the same handler over a step
// (2 s of 2 × 200 ms at 0.5× hold 10 calls).
const (
	unloadedLength = 2 * time.Second
	unloadedCalls  = 200
)

// unloadedSpan is how long unloadedP99 runs sh's naive handler.
func (cfg config) unloadedSpan(sh shape) time.Duration {
	enough := time.Duration(unloadedCalls / (0.5 * sh.capacity()) * float64(time.Second))
	return max(min(cfg.step, unloadedLength), enough)
}

// run parses the flags, runs the scenarios and prints their tables.
func run(args []string, stdout, stderr io.Writer) error {
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	m := thisMachine()
	if !cfg.json {
		fmt.Fprintf(stdout, "overload %s\n\n%s, %d CPUs, clock source %s, %s; seed %d, %v a step, client timeout %v\n\n",
			strings.Join(args, " "), m.CPU, m.CPUs, m.ClockSource, m.Go, cfg.seed, cfg.step, cfg.timeout)
	}
	unloaded := map[string]time.Duration{}
	var tables []table
	scenarioIndex := uint64(0)
	for _, name := range cfg.scenarios {
		for _, g := range cfg.groups(name) {
			inproc := cfg.inproc || g.peakRate() > cfg.httpMax
			key := fmt.Sprint(g.shape, inproc)
			if _, ok := unloaded[key]; !ok {
				p99, err := unloadedP99(cfg, g.shape, inproc)
				if err != nil {
					return err
				}
				unloaded[key] = p99
			}
			t := table{Title: g.title, Caption: g.caption, Behind: g.behind, Notes: cfg.notes(g, inproc, unloaded[key])}
			for _, sc := range g.scenarios {
				scenarioIndex++
				arrivals := schedule(rand.New(rand.NewPCG(cfg.seed, stream(g.title, sc.label))), sc.phases, g.shape.capacity(), sc.heavy)
				rows := make([]row, len(cfg.contenders))
				for k := range cfg.contenders {
					i := (k + int(scenarioIndex)) % len(cfg.contenders)
					c := cfg.contenders[i]
					fmt.Fprintf(stderr, "%s, %s: %s\n", g.title, sc.label, c.name)
					scaleAt, scale := sc.scaleAt()
					r, err := play(arrivals, c, g.shape.w, g.shape.s, scaleAt, scale, sc.measuredFrom(), cfg.timeout, inproc, sc.transport)
					if err != nil {
						return err
					}
					rows[i] = measure(sc, c.name, r, g.shape.capacity(), 2*unloaded[key])
					if cfg.windows && sc.transition == p99Back {
						printWindows(stderr, sc, c.name, r, 2*unloaded[key])
					}
				}
				t.Rows = append(t.Rows, rows...)
			}
			tables = append(tables, t)
			if !cfg.json {
				fmt.Fprintln(stdout, t.markdown())
			}
		}
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Args    []string `json:"args"`
			Machine machine  `json:"machine"`
			Seed    uint64   `json:"seed"`
			Step    string   `json:"step"`
			Tables  []table  `json:"tables"`
		}{args, m, cfg.seed, cfg.step.String(), tables})
	}
	return nil
}

// stream names a scenario's stream of randomness, so that it gets the
// same calls for a seed whichever other scenarios run.
func stream(title, label string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(title + "\x00" + label))
	return h.Sum64()
}

// unloadedP99 runs the naive handler alone at 0.5× for unloadedSpan and
// returns the p99 of its calls.
func unloadedP99(cfg config, sh shape, inproc bool) (time.Duration, error) {
	sc := scenario{phases: []phase{{length: cfg.unloadedSpan(sh), multiple: 0.5}}}
	arrivals := schedule(rand.New(rand.NewPCG(cfg.seed, 0)), sc.phases, sh.capacity(), false)
	r, err := play(arrivals, contender{"none", wrapNone}, sh.w, sh.s, 0, 1, 0, cfg.timeout, inproc, false)
	if err != nil {
		return 0, err
	}
	var lat []time.Duration
	for _, c := range r.calls {
		if c.outcome == served {
			lat = append(lat, c.latency)
		}
	}
	slices.Sort(lat)
	return percentile(lat, 0.99), nil
}

// notes are the lines under a table's title.
func (cfg config) notes(g group, inproc bool, unloaded time.Duration) []string {
	how := "over HTTP on 127.0.0.1"
	if inproc {
		how = "in process (ServeHTTP called directly)"
	}
	notes := []string{fmt.Sprintf("W × S = %s: capacity %s calls/s; %v a step; client timeout %v; %s; "+
		"unloaded p99 %s ms (the naive handler alone at 0.5×, %v); seed %d.",
		g.shape, thousands(int64(g.shape.capacity())), cfg.step, cfg.timeout, how, num(ms(unloaded)), cfg.unloadedSpan(g.shape), cfg.seed)}
	if strings.HasPrefix(g.title, "Steady load") {
		notes = append(notes, fmt.Sprintf("Each row is measured after %v at its rate, on the same server.", steadyWarmUp))
	}
	if g.behind {
		notes = append(notes, fmt.Sprintf("The first row is measured after %v at its rate, as the steady rows; the second "+
			"from the first call, the clients' breakers and the server's limit learning the surge (fresh ones).", steadyWarmUp))
	}
	return notes
}
