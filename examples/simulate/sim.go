package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The phases, in the order they run.
const (
	healthy = iota
	outage
	healed
	overload
	phaseCount
)

// slot is the resolution of the shed and recovery timings.
const slot = 100 * time.Millisecond

// maxRequests bounds a run to well under a minute of wall time (about 7
// million requests a second here).
const maxRequests = 100_000_000

type phase struct {
	name   string
	length time.Duration
}

type config struct {
	k          float64
	protection int
	window     time.Duration
	buckets    int
	rate       int     // requests offered per second
	errorRate  float64 // share of calls failing outside the outage
	capacity   float64 // share of the offered rate served while overloaded
	phases     [phaseCount]phase
	seed       uint64
	quiet      bool
}

func defaultConfig() config {
	return config{
		k:          breaker.DefaultK,
		protection: breaker.DefaultProtection,
		window:     breaker.DefaultWindow,
		buckets:    breaker.DefaultBuckets,
		rate:       2000,
		errorRate:  0.01,
		capacity:   0.5,
		phases: [phaseCount]phase{
			healthy:  {name: "healthy", length: 5 * time.Second},
			outage:   {name: "outage", length: 10 * time.Second},
			healed:   {name: "healed", length: 10 * time.Second},
			overload: {name: "overload", length: 10 * time.Second},
		},
		seed: 1,
	}
}

func (c config) validate() error {
	switch {
	case c.rate < 1 || c.rate > 1_000_000:
		return fmt.Errorf("-rate %d: must be between 1 and 1000000", c.rate)
	case !(c.errorRate >= 0 && c.errorRate <= 1):
		return fmt.Errorf("-errors %v: must be between 0 and 1", c.errorRate)
	case !(c.capacity >= 0 && c.capacity <= 1):
		return fmt.Errorf("-capacity %v: must be between 0 and 1", c.capacity)
	}
	var total time.Duration
	for _, p := range c.phases {
		if p.length < 0 {
			return fmt.Errorf("-%s %v: must not be negative", p.name, p.length)
		}
		total += p.length
	}
	if total > 24*time.Hour {
		return fmt.Errorf("phases add up to %v: at most 24h can be simulated", total)
	}
	if requests := total.Seconds() * float64(c.rate); requests > maxRequests {
		return fmt.Errorf("-rate %d over %v makes %.0f requests: at most %d can be simulated", c.rate, total, requests, maxRequests)
	}
	return nil
}

// counts are the calls of one stretch of time.
type counts struct {
	phase                                string
	offered, allowed, succeeded, dropped int
}

func (c *counts) add(o counts) {
	c.offered += o.offered
	c.allowed += o.allowed
	c.succeeded += o.succeeded
	c.dropped += o.dropped
}

type result struct {
	seconds []counts
	phases  [phaseCount]counts
	slots   [phaseCount][]counts // per 100 ms, for the timings
}

var errDependency = errors.New("dependency failed")

// simulate runs the phases one after another. Requests arrive evenly spaced;
// each is run through the breaker at its arrival time.
func simulate(cfg config) (*result, error) {
	clk := &virtualClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, err := breaker.New(breaker.WithName("simulated"), breaker.WithK(cfg.k),
		breaker.WithProtection(cfg.protection), breaker.WithWindow(cfg.window), breaker.WithBuckets(cfg.buckets),
		breaker.WithClock(clk), breaker.WithProba(proba.NewSeeded(cfg.seed)))
	if err != nil {
		return nil, err
	}
	dependencyRand := rand.New(rand.NewPCG(cfg.seed, cfg.seed+1))
	res := &result{}
	start := clk.now
	var elapsed time.Duration // since start, at the beginning of the phase
	var sec *counts
	for p, ph := range cfg.phases {
		res.phases[p].phase = ph.name
		n := int(int64(ph.length) * int64(cfg.rate) / int64(time.Second))
		// While overloaded, the dependency serves at most capacity·rate calls per slot.
		perSlot := int(math.Round(cfg.capacity * float64(cfg.rate) * slot.Seconds()))
		served, servedSlot := 0, -1
		for i := range n {
			at := elapsed + time.Duration(int64(i)*int64(time.Second)/int64(cfg.rate))
			clk.now = start.Add(at)
			if s := int(at / time.Second); s >= len(res.seconds) {
				res.seconds = append(res.seconds, counts{phase: ph.name})
				sec = &res.seconds[s]
			}
			slotIndex := int((at - elapsed) / slot)
			for len(res.slots[p]) <= slotIndex {
				res.slots[p] = append(res.slots[p], counts{})
			}
			var c counts
			c.offered = 1
			err := b.Do(func() error {
				c.allowed = 1
				switch {
				case p == outage:
					return errDependency
				case p == overload:
					if slotIndex != servedSlot {
						served, servedSlot = 0, slotIndex
					}
					if served >= perSlot {
						return errDependency
					}
					served++
				}
				if dependencyRand.Float64() < cfg.errorRate {
					return errDependency
				}
				c.succeeded = 1
				return nil
			})
			if errors.Is(err, breaker.ErrServiceUnavailable) {
				c.dropped = 1
			}
			sec.add(c)
			res.phases[p].add(c)
			res.slots[p][slotIndex].add(c)
		}
		elapsed += ph.length
	}
	return res, nil
}

// firstSlot returns the time from the start of phase p to the end of the
// first slot that satisfies ok, and whether there was one.
func (r *result) firstSlot(p int, ok func(c counts) bool) (time.Duration, bool) {
	for i, c := range r.slots[p] {
		if c.offered > 0 && ok(c) {
			return time.Duration(i+1) * slot, true
		}
	}
	return 0, false
}

func (r *result) printSummary(out io.Writer, cfg config) {
	fmt.Fprintf(out, "%-9s %9s %9s %9s %9s %9s\n", "phase", "length", "offered", "allowed%", "succeeded", "dropped%")
	for p, c := range r.phases {
		if cfg.phases[p].length == 0 {
			continue
		}
		fmt.Fprintf(out, "%-9s %9v %9d %8.1f%% %9d %8.1f%%\n",
			c.phase, cfg.phases[p].length, c.offered, pct(c.allowed, c.offered), c.succeeded, pct(c.dropped, c.offered))
	}
	fmt.Fprintln(out)
	timing := func(d time.Duration, ok bool, within time.Duration) string {
		if !ok {
			return fmt.Sprintf("not within %v", within)
		}
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	if c := r.phases[healthy]; c.offered > 0 {
		fmt.Fprintf(out, "healthy:  false drops                        %d (%.2f%%)\n", c.dropped, pct(c.dropped, c.offered))
	}
	if c := r.phases[outage]; c.offered > 0 {
		d, ok := r.firstSlot(outage, func(c counts) bool { return pct(c.dropped, c.offered) >= 90 })
		fmt.Fprintf(out, "outage:   share that reached the dependency  %.1f%%\n", pct(c.allowed, c.offered))
		fmt.Fprintf(out, "outage:   time until 90%% was shed            %s\n", timing(d, ok, cfg.phases[outage].length))
	}
	if c := r.phases[healed]; c.offered > 0 {
		d, ok := r.firstSlot(healed, func(c counts) bool { return pct(c.allowed, c.offered) >= 95 })
		fmt.Fprintf(out, "healed:   time until 95%% was admitted        %s\n", timing(d, ok, cfg.phases[healed].length))
		fmt.Fprintf(out, "healed:   dropped                            %.1f%%\n", pct(c.dropped, c.offered))
	}
	if c := r.phases[overload]; c.offered > 0 && cfg.capacity > 0 {
		capacity := cfg.capacity * float64(c.offered)
		attempts := "-"
		if c.succeeded > 0 {
			attempts = fmt.Sprintf("%.2f", float64(c.allowed)/float64(c.succeeded))
		}
		fmt.Fprintf(out, "overload: goodput, share of capacity         %.1f%%\n", 100*float64(c.succeeded)/capacity)
		fmt.Fprintf(out, "overload: attempts per success               %s\n", attempts)
	}
}
