// Command simulate drives a breaker against a simulated dependency on a
// virtual clock, and prints what the breaker let through and what it shed.
//
// The dependency goes through four phases: healthy with a few errors, a hard
// outage (every call fails), healed, and overloaded (it can serve only part of
// the offered rate; the excess fails). Requests arrive at a steady rate.
// The run prints, per simulated second, the calls offered, allowed,
// succeeded and dropped and the drop ratio (dropped/offered over that
// second: the breaker's drop probability as the calls saw it), then a
// summary per phase.
//
// Time is virtual, so a minute of traffic simulates in well under a second,
// and the same flags and seed print the same output.
//
//	go run ./examples/simulate
//	go run ./examples/simulate -k 2 -window 5s -outage 30s -seed 7
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
)

func main() {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("simulate", flag.ExitOnError)
	fs.Float64Var(&cfg.k, "k", breaker.DefaultK, "K, the multiplier on accepts (>= 1)")
	fs.IntVar(&cfg.protection, "protection", breaker.DefaultProtection, "failures tolerated before dropping (>= 0)")
	fs.DurationVar(&cfg.window, "window", breaker.DefaultWindow, "span of the rolling window")
	fs.IntVar(&cfg.buckets, "buckets", breaker.DefaultBuckets, "buckets in the window")
	fs.IntVar(&cfg.rate, "rate", cfg.rate, "requests offered per second (1 to 1,000,000)")
	fs.Float64Var(&cfg.errorRate, "errors", cfg.errorRate, "share of calls that fail while healthy, healed and overloaded (0 to 1)")
	fs.Float64Var(&cfg.capacity, "capacity", cfg.capacity, "share of the offered rate served while overloaded (0 to 1)")
	fs.DurationVar(&cfg.phases[healthy].length, "healthy", cfg.phases[healthy].length, "length of the healthy phase")
	fs.DurationVar(&cfg.phases[outage].length, "outage", cfg.phases[outage].length, "length of the hard outage")
	fs.DurationVar(&cfg.phases[healed].length, "healed", cfg.phases[healed].length, "length of the healed phase")
	fs.DurationVar(&cfg.phases[overload].length, "overload", cfg.phases[overload].length, "length of the overloaded phase")
	fs.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the random sources; the same seed prints the same output")
	fs.BoolVar(&cfg.quiet, "quiet", false, "print only the summary")
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on a bad flag

	if err := run(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "simulate:", err)
		os.Exit(2)
	}
}

// run simulates cfg and prints the report to out.
func run(cfg config, out io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	res, err := simulate(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "breaker: K=%v protection=%d window=%v buckets=%d; %d requests/s offered; seed %d\n\n",
		cfg.k, cfg.protection, cfg.window, cfg.buckets, cfg.rate, cfg.seed)
	if !cfg.quiet {
		fmt.Fprintf(out, "%6s  %-9s %8s %8s %9s %8s %10s\n", "second", "phase", "offered", "allowed", "succeeded", "dropped", "drop ratio")
		for i, s := range res.seconds {
			fmt.Fprintf(out, "%6d  %-9s %8d %8d %9d %8d %10.3f\n",
				i+1, s.phase, s.offered, s.allowed, s.succeeded, s.dropped, pct(s.dropped, s.offered)/100)
		}
		fmt.Fprintln(out)
	}
	res.printSummary(out, cfg)
	return nil
}

func pct(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// virtualClock is a clock the simulation moves by hand. Unlike clock.Mock it
// does not pause on every step, so minutes of traffic simulate in moments.
// It is used from one goroutine only.
type virtualClock struct{ now time.Time }

func (c *virtualClock) Now() time.Time { return c.now }
