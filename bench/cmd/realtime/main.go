// Command realtime drives a breaker with the default options through the
// standard scenario of docs/design/behaviour.md on the wall clock, and prints the
// figures the simulator prints for it.
//
// The scenario is the simulator's built-in one
// (examples/simulate/testdata/standard.json), its numbers copied here:
// 2,000 calls/s offered, evenly spaced; 5 s healthy, 10 s down (every call
// fails), 10 s healed, 10 s overloaded (the dependency serves half the
// offered rate and fails the excess); outside the outage it fails 1 % of
// the calls it serves. The simulator runs the breaker on a virtual clock;
// here the breaker reads the real one, as it does in production, and the
// run takes as long as the scenario, 35 s.
//
// Usage, from bench/ (the peer module):
//
//	GOWORK=off go run ./cmd/realtime [-runs 1] [-rate 2000] [-errors 0.01] [-capacity 0.5]
//	    [-healthy 5s] [-outage 10s] [-healed 10s] [-overload 10s]
//
// make bench-realtime runs it from the repository's root.
//
// Each call is counted by the time it was due, in its phase and in the
// phase's 100 ms slot. The figures, as the simulator defines them (go doc
// ./examples/simulate): the calls dropped while healthy (false drops); the
// share of the outage's calls admitted; the time from the start of the
// outage to the end of the first slot from which at least 90 % of the calls
// were dropped in 3 slots in a row (sustained), and the same from healing,
// for 95 % admitted; the share of the healed phase dropped; the calls that
// succeeded under overload, as a share of what the dependency could serve
// (goodput); and the admitted calls per success there. The last columns
// are how late the driver issued a call at worst, behind its due time, and
// the share of the calls issued 10 ms late or more: a busy machine makes
// the run's timings unreliable.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/srebreaker/srebreaker/bench/internal/figures"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// slot is the resolution of the timings, as in the simulator.
const slot = figures.Slot

// late is how far behind its due time a call is issued to count as late.
const late = 10 * time.Millisecond

// The phases of the standard scenario, in the order they run.
const (
	healthy = iota
	outage
	healed
	overload
	phaseCount
)

var phaseNames = [phaseCount]string{"healthy", "outage", "healed", "overload"}

// phase is a stretch of the scenario in which the dependency behaves the
// same.
type phase struct {
	length   time.Duration
	errors   float64 // share of the calls served that fail
	capacity float64 // calls served per second; the excess fails; +Inf for no limit
}

// config is what the flags set.
type config struct {
	runs     int
	rate     int     // calls offered per second
	errors   float64 // share of the calls served that fail outside the outage
	capacity float64 // share of the offered rate served while overloaded
	lengths  [phaseCount]time.Duration
}

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "realtime:", err)
		os.Exit(2)
	}
}

// run parses the flags and plays the scenario as many times as asked,
// printing a row of figures per run.
func run(args []string, stdout, stderr io.Writer) error {
	cfg := config{runs: 1, rate: 2000, errors: 0.01, capacity: 0.5,
		lengths: [phaseCount]time.Duration{5 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}}
	fs := flag.NewFlagSet("realtime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.runs, "runs", cfg.runs, "how many times to run the scenario, one after another")
	fs.IntVar(&cfg.rate, "rate", cfg.rate, "calls offered per second (1 to 100,000)")
	fs.Float64Var(&cfg.errors, "errors", cfg.errors, "share of the calls served that fail, in every phase but the outage (0 to 1)")
	fs.Float64Var(&cfg.capacity, "capacity", cfg.capacity, "share of the offered rate the dependency serves while overloaded (0 to 1)")
	for p, name := range phaseNames {
		fs.DurationVar(&cfg.lengths[p], name, cfg.lengths[p], "length of the "+name+" phase (0 leaves it out)")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	phases := cfg.phases()
	fmt.Fprintf(stdout, "srebreaker, default options, on the wall clock: %d calls/s; healthy %v, outage %v, healed %v, "+
		"overload %v at %g %% capacity; %g %% errors outside the outage\n\n", cfg.rate,
		cfg.lengths[healthy], cfg.lengths[outage], cfg.lengths[healed], cfg.lengths[overload], 100*cfg.capacity, 100*cfg.errors)
	fmt.Fprintln(stdout, "| run | false drops while healthy | reached the dependency while down | 90 % shed after (sustained) | "+
		"95 % admitted after healing (sustained) | healed phase dropped | goodput, % of capacity | attempts per success | driver's lag, at most | calls 10 ms late or more |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|")
	for r := 1; r <= cfg.runs; r++ {
		res := play(phases, cfg.rate, uint64(r))
		fmt.Fprintf(stdout, "| %d | %s |\n", r, strings.Join(res.cells(phases), " | "))
	}
	return nil
}

func (c config) validate() error {
	var total time.Duration
	for p, l := range c.lengths {
		if l < 0 {
			return fmt.Errorf("-%s %v: must not be negative", phaseNames[p], l)
		}
		total += l
	}
	switch {
	case c.runs < 1:
		return fmt.Errorf("-runs %d: at least 1", c.runs)
	case c.rate < 1 || c.rate > 100_000:
		return fmt.Errorf("-rate %d: must be between 1 and 100000 calls/s", c.rate)
	case !(c.errors >= 0 && c.errors <= 1):
		return fmt.Errorf("-errors %v: must be between 0 and 1", c.errors)
	case !(c.capacity >= 0 && c.capacity <= 1):
		return fmt.Errorf("-capacity %v: must be between 0 and 1", c.capacity)
	case total == 0:
		return errors.New("every phase is 0s long: nothing to run")
	}
	return nil
}

// phases returns the standard scenario's phases with the flags' lengths,
// error share and capacity.
func (c config) phases() []phase {
	ps := make([]phase, phaseCount)
	for p := range ps {
		ps[p] = phase{length: c.lengths[p], errors: c.errors, capacity: math.Inf(1)}
	}
	ps[outage].errors = 1
	ps[overload].capacity = c.capacity * float64(c.rate)
	return ps
}

// counts are the calls of a stretch of time, by the time they were due.
type counts struct{ offered, allowed, succeeded, dropped int }

func (c *counts) add(o counts) {
	c.offered += o.offered
	c.allowed += o.allowed
	c.succeeded += o.succeeded
	c.dropped += o.dropped
}

// result is one run: the calls per phase and per 100 ms slot of each phase,
// how late the driver was at worst, and how many calls it issued late.
type result struct {
	phases [phaseCount]counts
	slots  [phaseCount][]counts
	lag    time.Duration
	late   int
}

// play runs the phases once through a new breaker with the default
// options, on the wall clock: call i of a phase is due i/rate seconds after
// the phase began, and is issued as soon as it is due. seed seeds the
// dependency's failures.
func play(phases []phase, rate int, seed uint64) *result {
	b := breaker.MustNew(breaker.WithName("realtime"))
	failures := rand.New(rand.NewPCG(seed, seed+1))
	res := &result{}
	start := time.Now()
	var begun time.Duration // when the current phase began, since the start
	for p, ph := range phases {
		res.slots[p] = make([]counts, (ph.length+slot-1)/slot)
		dep := newCapacity(ph.capacity)
		n := int(int64(ph.length) * int64(rate) / int64(time.Second))
		for i := 0; i < n; {
			now := time.Since(start)
			// Issue every call due by now, then wait a little.
			for ; i < n; i++ {
				since := time.Duration(int64(i) * int64(time.Second) / int64(rate))
				if begun+since > now {
					break
				}
				lag := now - (begun + since)
				res.lag = max(res.lag, lag)
				if lag >= late {
					res.late++
				}
				c := counts{offered: 1}
				if promise, err := b.Allow(); err != nil {
					c.dropped = 1
				} else {
					c.allowed = 1
					ok := dep.take(since) && !(ph.errors >= 1 || failures.Float64() < ph.errors)
					if ok {
						c.succeeded = 1
					}
					report(promise, ok)
				}
				res.phases[p].add(c)
				res.slots[p][since/slot].add(c)
			}
			if i < n {
				time.Sleep(time.Millisecond)
			}
		}
		begun += ph.length
	}
	return res
}

func report(p srebreaker.Promise, ok bool) {
	if ok {
		p.Accept()
	} else {
		p.Reject("dependency failed")
	}
}

// capacity is the dependency's limit under overload, modelled as the
// simulator models it: room to serve is earned continuously, perSecond·Δt,
// from room for one call at the start of the phase; each call served spends
// one, and room left unused is kept up to a second's worth and one call.
type capacity struct {
	perSecond float64 // +Inf for no limit
	room      float64
	at        time.Duration // since the phase began
}

func newCapacity(perSecond float64) *capacity {
	c := &capacity{perSecond: perSecond}
	if perSecond > 0 {
		c.room = 1
	}
	return c
}

// take serves a call due at since, if there is room.
func (c *capacity) take(since time.Duration) bool {
	if math.IsInf(c.perSecond, 1) {
		return true
	}
	if since > c.at {
		c.room = min(1+c.perSecond, c.room+c.perSecond*(since-c.at).Seconds())
		c.at = since
	}
	if c.room < 1-1e-9 {
		return false
	}
	c.room--
	return true
}

// sustainedFrom is figures.SustainedFrom over a phase's slots.
func sustainedFrom(slots []counts, ok func(c counts) bool) (time.Duration, bool) {
	return figures.SustainedFrom(slots, func(c counts) int { return c.offered }, ok)
}

// pct is figures.Pct.
func pct(part, whole int) float64 { return figures.Pct(part, whole) }

// cells writes the figures of a run, "–" for those of a phase left out.
func (r *result) cells(phases []phase) []string {
	const dash = "–"
	cells := []string{dash, dash, dash, dash, dash, dash, dash}
	timing := func(p int, ok func(c counts) bool) string {
		if d, found := sustainedFrom(r.slots[p], ok); found {
			return fmt.Sprintf("%.1f s", d.Seconds())
		}
		return fmt.Sprintf("not within %v", phases[p].length)
	}
	if c := r.phases[healthy]; c.offered > 0 {
		cells[0] = fmt.Sprintf("%d (%.2f %%)", c.dropped, pct(c.dropped, c.offered))
	}
	if c := r.phases[outage]; c.offered > 0 {
		cells[1] = fmt.Sprintf("%.1f %%", pct(c.allowed, c.offered))
		cells[2] = timing(outage, func(c counts) bool { return pct(c.dropped, c.offered) >= 90 })
	}
	if c := r.phases[healed]; c.offered > 0 {
		cells[3] = timing(healed, func(c counts) bool { return pct(c.allowed, c.offered) >= 95 })
		cells[4] = fmt.Sprintf("%.1f %%", pct(c.dropped, c.offered))
	}
	if c, ph := r.phases[overload], phases[overload]; c.offered > 0 {
		if servable := min(float64(c.offered), ph.capacity*ph.length.Seconds()); servable > 0 {
			cells[5] = fmt.Sprintf("%.1f %%", 100*float64(c.succeeded)/servable)
		}
		cells[6] = "no success"
		if c.succeeded > 0 {
			cells[6] = fmt.Sprintf("%.2f", float64(c.allowed)/float64(c.succeeded))
		}
	}
	offered := 0
	for _, c := range r.phases {
		offered += c.offered
	}
	return append(cells, fmt.Sprintf("%.1f ms", float64(r.lag)/float64(time.Millisecond)),
		fmt.Sprintf("%.2f %%", pct(r.late, offered)))
}
