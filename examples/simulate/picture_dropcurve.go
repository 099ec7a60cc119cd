package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The drop curve's runs: at each success rate, a breaker sees curveRate
// calls a second for curveWarmup, to settle, then for curveMeasure, over
// which the share of calls it drops is measured.
const (
	curveRate    = 200
	curveWarmup  = 10 * time.Second
	curveMeasure = 20 * time.Second
	curveStep    = 0.02 // between success rates
)

// curveBreakers are the breakers the drop curve runs, each at every
// success rate.
var curveBreakers = []struct {
	id, label, style string
	k                float64
	opts             []breaker.Option
}{
	{"k1", "K = 1", `stroke="#9467bd" stroke-width="1.5"`, 1, []breaker.Option{breaker.WithK(1)}},
	{"default", "default (K = 1.5)", `stroke="#1f77b4" stroke-width="2.5"`, breaker.DefaultK, nil},
	{"plain", "WithPlainFormula (K = 1.5)", `stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="6 3"`,
		breaker.DefaultK, []breaker.Option{breaker.WithPlainFormula()}},
	{"k2", "K = 2", `stroke="#2ca02c" stroke-width="1.5"`, 2, []breaker.Option{breaker.WithK(2)}},
}

// steadyDropShare runs a breaker made with opts against a dependency that
// succeeds with probability success, on a virtual clock, and returns the
// share of calls it drops once settled.
func steadyDropShare(opts []breaker.Option, success float64, seed uint64) float64 {
	clk := &virtualClock{now: epoch}
	b := breaker.MustNew(append(opts, breaker.WithName("dependency"), breaker.WithClock(clk),
		breaker.WithProba(proba.NewSeeded(seed)))...)
	outcome := rand.New(rand.NewPCG(seed, 7))
	gap := time.Second / curveRate
	var offered, dropped int
	for t := time.Duration(0); t < curveWarmup+curveMeasure; t += gap {
		clk.now = epoch.Add(t)
		measured := t >= curveWarmup
		if measured {
			offered++
		}
		p, err := b.Allow()
		if err != nil {
			if measured {
				dropped++
			}
			continue
		}
		if outcome.Float64() < success {
			p.Accept()
		} else {
			p.Reject(failureReason)
		}
	}
	return float64(dropped) / float64(offered)
}

// drawDropCurve draws the steady drop share of each of curveBreakers
// against the dependency's success rate.
func drawDropCurve(w io.Writer) {
	c := lineChart{
		title: "Drop probability against the dependency's success rate",
		subtitle: fmt.Sprintf("Real breakers (package breaker) on a virtual clock, seeded. At each success rate, %d calls/s, "+
			"%v to settle, then the share of calls dropped over %v. Shedding starts near a success rate of 1/K.",
			curveRate, curveWarmup, curveMeasure),
		xLabel: "success rate of the dependency (successes / calls it served)",
		yLabel: "share of calls the breaker drops",
		xMax:   1, yMax: 1, xDivisions: 10, yDivisions: 5,
		xTick: percent, yTick: func(v float64) string { return fmt.Sprintf("%g", v) },
	}
	for _, k := range []float64{2, breaker.DefaultK} {
		c.marks = append(c.marks, vMark{x: 1 / k, label: fmt.Sprintf("1/K = %.2g (K = %g)", 1/k, k),
			style: `stroke="#777777" stroke-dasharray="3 3"`})
	}
	steps := 50 // 1 / curveStep
	for _, cb := range curveBreakers {
		l := plotLine{id: cb.id, label: cb.label, style: cb.style}
		for i := 0; i <= steps; i++ {
			s := float64(i) * curveStep
			l.xs = append(l.xs, s)
			l.ys = append(l.ys, steadyDropShare(cb.opts, s, uint64(i+1)))
		}
		c.lines = append(c.lines, l)
	}
	c.notes = append(c.notes, note{x: 0.985, y: 0.8, anchor: "end", fill: "#444444",
		text: "K = 1 sheds as soon as any call fails"})
	writeLineChart(w, c)
}
