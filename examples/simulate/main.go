package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/srebreaker/srebreaker/internal/tuning"
	"io"
	"os"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // parseFlags printed the error and the usage
	}
	if err := run(cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "simulate:", err)
		os.Exit(2)
	}
}

// scenarioFlags describe the built-in scenario; a scenario file or a trace
// replaces them.
var scenarioFlags = []string{"rate", "errors", "capacity", "says-overloaded", "healthy", "outage", "healed", "overload", "latency"}

// namedScenarioFlags are those of scenarioFlags a named scenario takes too.
var namedScenarioFlags = map[string]bool{"rate": true, "latency": true}

// sweepConflicts says why a flag cannot be given with -rates or -seeds.
var sweepConflicts = map[string]string{
	"rate":     "give one; -rates runs each rate in turn",
	"seed":     "give one; -seeds runs each seed in turn",
	"scenario": "give one; -rates sets the rate of the built-in scenario, a scenario file brings its own",
	"replay":   "give one; a trace brings its own traffic",
	"record":   "give one; a sweep makes many runs, -record writes the trace of one",
	"svg":      "give one; a sweep makes many runs, -svg charts one",
}

// parseFlags parses the command line; it prints errors and the usage to
// stderr.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage of simulate:
  go run ./examples/simulate [flags]

Drives a breaker against a simulated dependency on a virtual clock, or
replays a recorded trace through one, and prints what it let through and
what it shed. By default the dependency is healthy, down, healed, then
overloaded, at -rate requests/s. go doc ./examples/simulate explains the
report, the scenario and trace formats.

`)
		printDefaults(fs)
	}
	fs.Float64Var(&cfg.k, "k", breaker.DefaultK, "K, the multiplier on accepts: about K calls are let through per success; larger tolerates more failures (at least 1)")
	fs.IntVar(&cfg.protection, "protection", breaker.DefaultProtection, "failures tolerated beyond K·accepts before any call is dropped (at least 0)")
	fs.DurationVar(&cfg.window, "window", breaker.DefaultWindow, "span of the rolling window of outcomes; longer is steadier and slower to react")
	fs.IntVar(&cfg.buckets, "buckets", tuning.DefaultBuckets, "buckets the window is split into; outcomes leave it a bucket at a time (1 to 65,536, each at least 1ms)")
	fs.Float64Var(&cfg.aggression, "aggression", tuning.DefaultAggression, "exponent on the drop probability p: the breaker drops with p^(1/aggression); larger sheds sooner (1 to 10)")
	fs.BoolVar(&cfg.countDrops, "count-drops", true, "count the breaker's drops as requests in the formula, at most K-1 per admitted call")
	fs.BoolVar(&cfg.trust, "trust-recent", true, "when the newest buckets agree (only failures, or only successes), act on them at once rather than on the whole window")
	fs.IntVar(&cfg.evidence, "evidence", cfg.evidence, "admitted calls the formula wants to judge on: with fewer in the window, it reads back into older calls, up to -horizon (0 for the window alone)")
	fs.DurationVar(&cfg.horizon, "horizon", cfg.horizon, "how far back the formula reads for -evidence (0 for the breaker's default, 30 windows)")
	fs.DurationVar(&cfg.slowCall, "slow-call", 0, "a call slower than this counts as a failure, and one in flight longer counts against the dependency before it returns (WithSlowCall; a bucket of the window to 2m); 0 for the normal the breaker learns")
	fs.BoolVar(&cfg.plain, "plain", false, "the plain formula (go-zero's, the SRE book's): aggression 1, drops not counted, no trust in recent buckets; overrides -aggression, -count-drops and -trust-recent")
	fs.IntVar(&cfg.rate, "rate", cfg.rate, "requests offered per second (1 to 1,000,000); a named scenario runs at its own unless this is given")
	fs.Float64Var(&cfg.errorRate, "errors", cfg.errorRate, "share of the calls served that fail, in every phase but the outage (0 to 1); in the overload phase the calls beyond -capacity fail too")
	fs.Float64Var(&cfg.capacity, "capacity", cfg.capacity, "share of the offered rate the dependency serves in the overload phase (0 to 1)")
	fs.BoolVar(&cfg.saysOverloaded, "says-overloaded", false, "in the overload phase the dependency says it is overloaded when it fails the calls beyond -capacity, and the breaker hears them through srebreaker.RejectOverloaded (counting its drops while they are in its window); the calls failing at -errors are rejected as before")
	fs.DurationVar(&cfg.phases[healthy].length, "healthy", cfg.phases[healthy].length, "length of the healthy phase, in which -errors of the calls fail (0 leaves it out)")
	fs.DurationVar(&cfg.phases[outage].length, "outage", cfg.phases[outage].length, "length of the outage phase, in which every call fails (0 leaves it out)")
	fs.DurationVar(&cfg.phases[healed].length, "healed", cfg.phases[healed].length, "length of the healed phase, in which -errors of the calls fail again (0 leaves it out)")
	fs.DurationVar(&cfg.phases[overload].length, "overload", cfg.phases[overload].length, "length of the overload phase, in which the calls beyond -capacity fail, and -errors of the others (0 leaves it out)")
	fs.StringVar(&cfg.scenarioFile, "scenario", "", "simulate the phases of this JSON `file` instead of the built-in four, or those of a scenario built in under this name: "+namedScenarioList())
	fs.Func("latency", "the dependency's `latency` while well, in every phase of the built-in scenario or the phases of a named one that are neither hung nor slow: a Go duration, uniform(low,high), tail(median,p99,p99.9) or hang", func(s string) error {
		base, d, err := parseLatency(s)
		if err == nil {
			err = checkLatency(base, d)
		}
		cfg.latency = &wellLatency{base: base, distribution: d}
		return err
	})
	fs.Func("timeout", "the client's `timeout`: a call not answered by then fails (context deadline exceeded); 0 for none. Default: none for the built-in scenario, 30s for a named one, a scenario file's own", func(s string) error {
		d, err := time.ParseDuration(s)
		if err == nil && (d < 0 || d > maxLatency) {
			err = fmt.Errorf("must be between 0 (none) and %v", maxLatency)
		}
		cfg.timeout = &d
		return err
	})
	fs.StringVar(&cfg.replayFile, "replay", "", "replay this CSV `trace` of timestamp,outcome rows instead of simulating")
	fs.StringVar(&cfg.recordFile, "record", "", "write the simulated calls to this `file` as a trace for -replay, and name it on stderr")
	fs.StringVar(&cfg.svgFile, "svg", "", "write a chart of the run to this SVG `file`, and name it on stderr")
	fs.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the random sources; the same seed prints the same output")
	fs.BoolVar(&cfg.quiet, "quiet", false, "leave out the per-second table, or in a sweep the rows per seed")
	var rates, seeds string
	fs.StringVar(&rates, "rates", "", "sweep: run the built-in scenario, or a named one, at each of these comma-separated `rates` (requests/s, e.g. 2,5,20,200,2000) and print a row of figures per rate")
	fs.StringVar(&seeds, "seeds", "", "sweep: run with each of these `seeds` (e.g. 1-5 or 1,7,10-12) and print a row per rate and seed, then the worst over the seeds")
	fs.IntVar(&cfg.clients, "clients", cfg.clients, "breakers of one dependency, a fleet of clients each offering -rate, sharing histories as redisbreaker does (1 to 1,000)")
	fs.BoolVar(&cfg.share, "share", cfg.share, "with -clients: share histories through an in-process store with redisbreaker's semantics; false keeps each client on its own history")
	fs.IntVar(&cfg.cutoff, "cutoff", 0, "with -clients: the outage phase fails the calls of clients 1 to `N` only (1 to clients-1); the others' succeed")
	var ablate string
	fs.StringVar(&ablate, "ablate", "", "turn these comma-separated `rules` of the judge off, to measure what they do")
	fs.BoolVar(&cfg.ablation, "ablation", false, "run the scenarios of the ablation with each rule of the judge off in turn, over -seeds (1-5 by default), and print one table")
	partition := fs.Bool("partition", false, "with -clients: the outage phase fails client 1's calls only; the same as -cutoff 1")
	fs.Func("mix", "give the calls a criticality, in these `weights` of CRITICAL_PLUS,CRITICAL,SHEDDABLE_PLUS,SHEDDABLE (such as 20,40,20,20); the dependency then serves the highest levels first. Replaces a scenario file's mix", func(s string) error {
		m, err := parseMix(s)
		cfg.mix = m
		return err
	})
	fs.BoolVar(&cfg.fifo, "fifo", false, "with a mix: the dependency serves calls first come, first served, whatever their level, as one that does not read the criticality")
	fs.BoolVar(&cfg.shuffle, "shuffle", false, "with a mix: give the levels of each 100 ms slot in a random order (from -seed) rather than spread evenly")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	fail := func(err error) (config, error) {
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return cfg, err
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q: every setting is a flag", fs.Arg(0)))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if n, ok := namedScenarios[cfg.scenarioFile]; ok {
		cfg.named, cfg.scenarioFile = cfg.scenarioFile, ""
		if !set["rate"] {
			cfg.rate = n.rate
		}
	}
	if *partition {
		cfg.cutoff = 1
	}
	if set["ablate"] {
		rules, err := parseAblate(ablate)
		if err != nil {
			return fail(err)
		}
		for _, r := range rules {
			r.off(&cfg.breakerConfig)
		}
		cfg.ablate = rules
	}
	if cfg.ablation {
		for name := range set {
			if name != "ablation" && name != "seeds" && name != "ablate" {
				return fail(fmt.Errorf("-ablation and -%s: -ablation runs its own scenarios, over -seeds, with -ablate's rules off together or each rule in turn", name))
			}
		}
	}
	replaces := ""
	switch {
	case set["timeout"] && set["replay"]:
		return fail(errors.New("-timeout and -replay: give one; a trace's calls end when its rows say"))
	case set["scenario"] && set["replay"]:
		return fail(errors.New("-scenario and -replay: give one; a trace brings its own traffic"))
	case set["mix"] && set["replay"]:
		return fail(errors.New("-mix and -replay: give one; a trace's calls carry no criticality"))
	case set["record"] && set["replay"]:
		return fail(errors.New("-record and -replay: give one; -record writes the trace of a simulation"))
	case set["replay"] && (set["clients"] || set["share"] || set["partition"] || set["cutoff"]):
		return fail(errors.New("-replay: replays one breaker's trace; -clients, -share, -cutoff and -partition simulate a fleet"))
	case set["partition"] && set["cutoff"]:
		return fail(errors.New("-partition and -cutoff: give one; -partition is -cutoff 1"))
	case set["cutoff"] && cfg.cutoff == 0:
		return fail(errors.New("-cutoff 0: cuts no client off; give 1 or more, or leave -cutoff out"))
	case set["record"] && cfg.clients > 1:
		return fail(errors.New("-record: writes the trace of one breaker, not of -clients"))
	case set["scenario"]:
		replaces = "-scenario"
		if cfg.named != "" {
			replaces = "-scenario " + cfg.named
		}
	case set["replay"]:
		replaces = "-replay"
	}
	if replaces != "" {
		for _, name := range scenarioFlags {
			if set[name] && !(cfg.named != "" && namedScenarioFlags[name]) {
				return fail(fmt.Errorf("-%s: describes the built-in scenario, which %s replaces", name, replaces))
			}
		}
	}
	var err error
	if set["rates"] {
		if cfg.rates, err = parseRates(rates); err != nil {
			return fail(err)
		}
	}
	if set["seeds"] {
		if cfg.seeds, err = parseSeeds(seeds); err != nil {
			return fail(err)
		}
	}
	for _, c := range [][2]string{{"rates", "rate"}, {"rates", "scenario"}, {"rates", "replay"}, {"seeds", "seed"},
		{"seeds", "replay"}, {"rates", "record"}, {"seeds", "record"}, {"rates", "svg"}, {"seeds", "svg"}} {
		if set[c[0]] && set[c[1]] && !(c[1] == "scenario" && cfg.named != "") {
			return fail(fmt.Errorf("-%s and -%s: %s", c[0], c[1], sweepConflicts[c[1]]))
		}
	}
	return cfg, nil
}

// run simulates cfg, or replays its trace, and prints the report to stdout.
// It also writes the chart and the trace cfg asks for, and then says on
// stderr, one line per file, where they went; -quiet leaves those lines in.
func run(cfg config, stdout, stderr io.Writer) error {
	if cfg.replayFile != "" {
		return runReplay(cfg, stdout, stderr)
	}
	if err := cfg.fleetConfig.validate(); err != nil {
		return err
	}
	if cfg.ablation {
		return runAblation(cfg.ablate, cfg.seeds, stdout)
	}
	if len(cfg.rates) > 0 || len(cfg.seeds) > 0 {
		return runSweep(cfg, cfg.rates, cfg.seeds, stdout)
	}
	sc, err := cfg.scenario()
	if err != nil {
		return err
	}
	if cfg.recordFile != "" && sc.saysOverloaded() {
		return errors.New("-record: a trace says only whether a call succeeded, not that the dependency said it was overloaded; leave out -says-overloaded or the scenario's saysOverloaded")
	}
	var res *result
	switch {
	case cfg.recordFile != "":
		res, err = simulateRecording(cfg.breakerConfig, sc, cfg.recordFile)
	case cfg.clients > 1:
		var fr *fleetResult
		res, fr, err = simulateFleet(cfg.breakerConfig, cfg.fleetConfig, sc)
		if err == nil {
			res.fleet = fr
		}
	default:
		res, err = simulateScenario(cfg.breakerConfig, sc, nil)
	}
	if err != nil {
		return err
	}
	c := simulationChart(cfg, res)
	if cfg.svgFile != "" {
		if err := writeSVGFile(cfg.svgFile, c); err != nil {
			return err
		}
	}
	printSimulation(stdout, cfg, res)
	if cfg.recordFile != "" {
		calls := 0
		for _, p := range res.phases {
			calls += p.offered
		}
		fmt.Fprintf(stderr, "wrote %s (trace of %d calls, for -replay)\n", cfg.recordFile, calls)
	}
	if cfg.svgFile != "" {
		fmt.Fprintf(stderr, "wrote %s (%s)\n", cfg.svgFile, c.about())
	}
	return nil
}

// simulateRecording simulates sc and writes its trace to path, which it
// removes again if the run fails.
func simulateRecording(bc breakerConfig, sc scenario, path string) (*result, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	res, err := simulateScenario(bc, sc, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return res, nil
}

func runReplay(cfg config, stdout, stderr io.Writer) error {
	res, err := replayFile(cfg.breakerConfig, cfg.replayFile)
	if err != nil {
		return err
	}
	c := replayChart(cfg, res)
	if cfg.svgFile != "" {
		if err := writeSVGFile(cfg.svgFile, c); err != nil {
			return err
		}
	}
	printReplay(stdout, cfg, res)
	if cfg.svgFile != "" {
		fmt.Fprintf(stderr, "wrote %s (%s)\n", cfg.svgFile, c.about())
	}
	return nil
}

// hiddenFlags are left out of the usage: they measure the library's own
// rules (docs/design/algorithm.md, "Each rule measured out"), not a breaker a
// caller can build.
var hiddenFlags = map[string]bool{"ablate": true, "ablation": true}

// printDefaults prints the usage of fs's flags but the hidden ones.
func printDefaults(fs *flag.FlagSet) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if !hiddenFlags[f.Name] {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.PrintDefaults()
}
