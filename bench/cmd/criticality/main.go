// Command criticality drives srebreaker and failsafe-go's priority
// throttler through the criticality scenario of docs/design/behaviour.md, side by
// side, in real time, and prints per-level figures for each.
//
// The scenario: 2,000 calls/s offered, 20 % CRITICAL_PLUS, 40 % CRITICAL,
// 20 % SHEDDABLE_PLUS and 20 % SHEDDABLE, spread evenly; 5 s in which the
// dependency fails 1 % of the calls, then 20 s in which it serves 1,000
// calls/s and fails the rest, serving the highest levels first (as a server
// that reads the criticality does), modelled as the simulator models it.
// It is the simulator's examples/simulate/testdata/criticality.json; the
// simulator runs srebreaker on a virtual clock, while failsafe-go reads the
// wall clock and its global random source, so here both run on the wall
// clock, each against a dependency of its own, from the same arrivals.
//
// Usage, from bench/ (the peer module):
//
//	GOWORK=off go run ./cmd/criticality [-runs 1] [-healthy 5s] [-overload 20s] [-fifo] [-shuffle]
//
// -fifo has the dependency serve calls first come, first served, whatever
// their level, as most dependencies do (they do not read the criticality):
// the simulator's examples/simulate/testdata/criticality-fifo.json.
// -shuffle gives the levels of each 100 ms slot's 200 calls in a random
// order, seeded with the run's number, rather than spread evenly; both
// libraries see the same order.
//
// srebreaker runs with its defaults, asked through AllowCtx with the level
// in the context. failsafe-go runs as its documentation shows,
// adaptivethrottler.NewBuilder[any]().BuildPrioritized(adaptivethrottler.NewPrioritizer()),
// with its defaults; the levels map to its priorities (CRITICAL_PLUS to
// VeryHigh, CRITICAL to High, SHEDDABLE_PLUS to Medium, SHEDDABLE to Low),
// and the prioritizer is calibrated every 100 ms, from the driving loop.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	"github.com/failsafe-go/failsafe-go/priority"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
)

const (
	rate      = 2000                   // calls offered per second
	capacity  = 1000                   // calls per second served while overloaded
	slot      = 100 * time.Millisecond // the capacity's and the calibration's period
	errorRate = 0.01                   // share of calls failing while healthy
)

// The levels, highest first, their share of the calls and failsafe-go's
// priority for each.
var (
	levels     = [4]criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}
	weights    = [4]float64{20, 40, 20, 20}
	priorities = [4]priority.Priority{priority.VeryHigh, priority.High, priority.Medium, priority.Low}
)

func main() {
	runs := flag.Int("runs", 1, "how many times to run the scenario")
	healthy := flag.Duration("healthy", 5*time.Second, "length of the healthy phase")
	overload := flag.Duration("overload", 20*time.Second, "length of the overload phase")
	fifo := flag.Bool("fifo", false, "the dependency serves calls first come, first served, whatever their level")
	shuffle := flag.Bool("shuffle", false, "each 100 ms slot's levels in a random order, seeded with the run's number")
	flag.Parse()
	if *runs < 1 || *healthy < 0 || *overload <= 0 {
		fmt.Fprintln(os.Stderr, "criticality: -runs must be at least 1, -healthy at least 0 and -overload positive")
		os.Exit(2)
	}
	order, serves := "spread evenly", "highest levels first"
	if *shuffle {
		order = "shuffled per 100 ms"
	}
	if *fifo {
		serves = "first come, first served"
	}
	fmt.Printf("%d calls/s, mix %v (CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE), %s; %v healthy (%.0f %% errors), "+
		"then %v at %d calls/s served, %s\n\n", rate, weights, order, *healthy, 100*errorRate, *overload, capacity, serves)
	fmt.Println("| library | run | goodput, % of capacity | attempts per success | CRITICAL_PLUS succeeded | CRITICAL succeeded (of what fits) | CRITICAL_PLUS and CRITICAL succeeded | SHEDDABLE_PLUS succeeded | SHEDDABLE succeeded | drops on the sheddable levels | drops by level (CP, C, SP, S) | false drops while healthy |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for run := 1; run <= *runs; run++ {
		var r *rand.Rand
		if *shuffle {
			r = rand.New(rand.NewPCG(uint64(run), 0))
		}
		o, t := play(*healthy, *overload, *fifo, r)
		o.print("srebreaker", run, *overload)
		t.print("failsafe-go priority throttler", run, *overload)
	}
}

// limiter is what the scenario drives: ask at level l, then report.
type limiter interface {
	allow(l int) (report func(ok bool), admitted bool)
}

type ours struct {
	b    breaker.Breaker
	ctxs [4]context.Context
}

func newOurs() *ours {
	o := &ours{b: breaker.MustNew()}
	for i, c := range levels {
		o.ctxs[i] = criticality.With(context.Background(), c)
	}
	return o
}

func (o *ours) allow(l int) (func(bool), bool) {
	p, err := o.b.AllowCtx(o.ctxs[l])
	if err != nil {
		return nil, false
	}
	return func(ok bool) { report(p, ok) }, true
}

func report(p srebreaker.Promise, ok bool) {
	if ok {
		p.Accept()
	} else {
		p.Reject("failed")
	}
}

type theirs struct {
	t    adaptivethrottler.PriorityThrottler[any]
	p    priority.Prioritizer
	ctxs [4]context.Context
}

func newTheirs() *theirs {
	p := adaptivethrottler.NewPrioritizer()
	o := &theirs{t: adaptivethrottler.NewBuilder[any]().BuildPrioritized(p), p: p}
	for i, pr := range priorities {
		o.ctxs[i] = priority.ContextWithPriority(context.Background(), pr)
	}
	return o
}

func (o *theirs) allow(l int) (func(bool), bool) {
	if !o.t.TryAcquirePermit(o.ctxs[l]) {
		return nil, false
	}
	return func(ok bool) {
		if ok {
			o.t.RecordSuccess()
		} else {
			o.t.RecordFailure()
		}
	}, true
}

// counts are one library's calls in a phase, per level.
type counts struct {
	offered, allowed, succeeded, dropped [4]int
}

type result struct{ healthy, overload counts }

// dependency serves the overload phase's capacity, highest levels first,
// as the simulator's does: room to serve is earned continuously, capacity
// calls a second, kept up to a second's worth and one call, and each call
// served spends one; a call of a level may spend it only down to a floor,
// the calls of the higher levels that reached the dependency in the
// previous 100 ms slot.
type dependency struct {
	fifo      bool // serve first come, first served: no floor
	room      float64
	at        time.Duration
	slot      int
	prev, cur [4]int
}

func newDependency(fifo bool) *dependency { return &dependency{fifo: fifo, room: 1, slot: -1} }

func (d *dependency) serve(since time.Duration, l int) bool {
	if s := int(since / slot); s != d.slot {
		d.prev = [4]int{}
		if s == d.slot+1 {
			d.prev = d.cur
		}
		d.cur, d.slot = [4]int{}, s
	}
	d.cur[l]++
	if since > d.at {
		d.room = min(1+capacity, d.room+capacity*(since-d.at).Seconds())
		d.at = since
	}
	floor := 0
	for h := range l {
		if !d.fifo {
			floor += d.prev[h]
		}
	}
	if d.room < 1+float64(floor)-1e-9 {
		return false
	}
	d.room--
	return true
}

// play runs the scenario once through both libraries, from the same
// arrivals, in real time. fifo and shuffle are as the flags; shuffle is
// nil to spread the levels evenly.
func play(healthy, overload time.Duration, fifo bool, shuffle *rand.Rand) (oursResult, theirsResult result) {
	libs := []limiter{newOurs(), newTheirs()}
	fs := libs[1].(*theirs)
	results := []*result{&oursResult, &theirsResult}
	deps := []*dependency{newDependency(fifo), newDependency(fifo)}
	perSlot := int(rate * slot.Seconds())
	var dealt []int // with shuffle, the levels of the current slot's calls
	var credit [4]float64
	total := 0.0
	for _, w := range weights {
		total += w
	}
	// next returns the next level, by smooth weighted round robin.
	next := func() int {
		l := 0
		for j, w := range weights {
			credit[j] += w
			if credit[j] > credit[l] {
				l = j
			}
		}
		credit[l] -= total
		return l
	}
	healthyCalls := int(healthy.Seconds() * rate)
	calls := healthyCalls + int(overload.Seconds()*rate)
	start := time.Now()
	nextCalibration := slot
	failEvery := int(math.Round(1 / errorRate))
	for i := 0; i < calls; {
		elapsed := time.Since(start)
		for elapsed >= nextCalibration {
			fs.p.Calibrate()
			nextCalibration += slot
		}
		due := min(calls, int(elapsed.Seconds()*rate)+1)
		for ; i < due; i++ {
			var l int
			if shuffle == nil {
				l = next()
			} else {
				if i%perSlot == 0 { // a slot's first call: deal its levels
					dealt = dealt[:0]
					for range perSlot {
						dealt = append(dealt, next())
					}
					shuffle.Shuffle(len(dealt), func(a, b int) { dealt[a], dealt[b] = dealt[b], dealt[a] })
				}
				l = dealt[i%perSlot]
			}
			for k, lib := range libs {
				c := &results[k].healthy
				if i >= healthyCalls {
					c = &results[k].overload
				}
				c.offered[l]++
				done, ok := lib.allow(l)
				if !ok {
					c.dropped[l]++
					continue
				}
				c.allowed[l]++
				var served bool
				if i < healthyCalls {
					served = i%failEvery != failEvery-1
				} else {
					served = deps[k].serve(time.Duration(i-healthyCalls)*time.Second/rate, l)
				}
				if served {
					c.succeeded[l]++
				}
				done(served)
			}
		}
		time.Sleep(time.Millisecond)
	}
	return oursResult, theirsResult
}

func sum(v [4]int) int { return v[0] + v[1] + v[2] + v[3] }

func pct(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

func (r result) print(name string, run int, overload time.Duration) {
	o := r.overload
	servable := math.Min(float64(sum(o.offered)), capacity*overload.Seconds())
	attempts := "–"
	if s := sum(o.succeeded); s > 0 {
		attempts = fmt.Sprintf("%.2f", float64(sum(o.allowed))/float64(s))
	}
	// What fits of CRITICAL once CRITICAL_PLUS is served.
	fits := math.Min(float64(o.offered[1]), math.Max(0, capacity*overload.Seconds()-float64(o.succeeded[0])))
	critical := fmt.Sprintf("%.1f %% (%.1f %%)", pct(o.succeeded[1], o.offered[1]), 100*float64(o.succeeded[1])/math.Max(1, fits))
	sheddableDrops := pct(o.dropped[2]+o.dropped[3], sum(o.dropped))
	fmt.Printf("| %s | %d | %.1f %% | %s | %.1f %% | %s | %.1f %% | %.1f %% | %.1f %% | %.1f %% | %d, %d, %d, %d | %d |\n",
		name, run, 100*float64(sum(o.succeeded))/servable, attempts, pct(o.succeeded[0], o.offered[0]), critical,
		pct(o.succeeded[0]+o.succeeded[1], o.offered[0]+o.offered[1]),
		pct(o.succeeded[2], o.offered[2]), pct(o.succeeded[3], o.offered[3]), sheddableDrops,
		o.dropped[0], o.dropped[1], o.dropped[2], o.dropped[3], sum(r.healthy.dropped))
}
