package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// shape is the kind of a phase's distribution of latencies.
type shape int

const (
	shapeFixed   shape = iota // every call takes the phase's latency
	shapeUniform              // uniform between low and high
	shapeTail                 // heavy-tailed, through a median, a p99 and a p99.9
	shapeHang                 // the call never answers; only the client's timeout ends it
)

// distribution is how long the dependency takes to answer the calls of a
// phase. The zero value is a fixed latency, the phase's own (phase.latency),
// so that a phase written before distributions existed reads the same.
type distribution struct {
	shape             shape
	low, high         time.Duration // uniform
	median, p99, p999 time.Duration // tail
}

// The points of a tail's quantile function beyond the three it is given:
// at q = 0 half the median, at q = 1 the p99.9 times the ratio p99.9/p99,
// what the p99.99 would be if the tail kept growing as it did from the p99
// to the p99.9. Between points, the logarithm of the latency is linear in
// q.
const tailFloor = 0.5 // the latency at q = 0, as a multiple of the median

// tailPoints returns the quantile function's points (q, latency).
func (d distribution) tailPoints() (qs [5]float64, latencies [5]float64) {
	median, p99, p999 := float64(d.median), float64(d.p99), float64(d.p999)
	return [5]float64{0, 0.5, 0.99, 0.999, 1},
		[5]float64{tailFloor * median, median, p99, p999, p999 * p999 / p99}
}

// quantile returns the tail's latency at q, from 0 to 1.
func (d distribution) quantile(q float64) time.Duration {
	qs, ls := d.tailPoints()
	i := 1
	for i < len(qs)-1 && q > qs[i] {
		i++
	}
	// Between points i-1 and i, log-linear; equal points give that value.
	lo, hi := ls[i-1], ls[i]
	f := (q - qs[i-1]) / (qs[i] - qs[i-1])
	return time.Duration(math.Round(lo * math.Exp(f*math.Log(hi/lo))))
}

// draw returns the latency of a call of a phase whose fixed latency is
// base, and false if the call never answers. Only uniform and tail draw
// from r, one number a call, so that a fixed latency leaves r's sequence
// as it was.
func (d distribution) draw(base time.Duration, r *rand.Rand) (time.Duration, bool) {
	switch d.shape {
	case shapeUniform:
		return d.low + time.Duration(r.Int64N(int64(d.high-d.low)+1)), true
	case shapeTail:
		return d.quantile(r.Float64()), true
	case shapeHang:
		return 0, false
	}
	return base, true
}

// delays reports whether some call of a phase with fixed latency base
// reaches the breaker later than it was made.
func (d distribution) delays(base time.Duration) bool {
	return d.shape != shapeFixed || base > 0
}

// format writes the distribution as a scenario file and -latency take it.
func (d distribution) format(base time.Duration) string {
	switch d.shape {
	case shapeUniform:
		return fmt.Sprintf("uniform(%v,%v)", d.low, d.high)
	case shapeTail:
		return fmt.Sprintf("tail(%v,%v,%v)", d.median, d.p99, d.p999)
	case shapeHang:
		return "hang"
	}
	return base.String()
}

// parseLatency reads a latency as a scenario file and -latency give it: a
// Go duration, the same for every call; uniform(low,high);
// tail(median,p99,p99.9); or hang. A fixed latency comes back as base and
// the zero distribution. The ranges are checked by [checkLatency].
func parseLatency(s string) (base time.Duration, d distribution, err error) {
	s = strings.TrimSpace(s)
	args := func(prefix string, n int) ([]time.Duration, error) {
		inner, ok := strings.CutSuffix(strings.TrimPrefix(s, prefix), ")")
		parts := strings.Split(inner, ",")
		if !ok || len(parts) != n {
			return nil, fmt.Errorf("latency %q: want %s%s)", s, prefix, map[int]string{2: "low,high", 3: "median,p99,p99.9"}[n])
		}
		ds := make([]time.Duration, n)
		for i, p := range parts {
			if ds[i], err = time.ParseDuration(strings.TrimSpace(p)); err != nil {
				return nil, fmt.Errorf("latency %q: %q is not a Go duration such as \"250ms\"", s, strings.TrimSpace(p))
			}
		}
		return ds, nil
	}
	switch {
	case s == "hang":
		return 0, distribution{shape: shapeHang}, nil
	case strings.HasPrefix(s, "uniform("):
		ds, err := args("uniform(", 2)
		if err != nil {
			return 0, d, err
		}
		return 0, distribution{shape: shapeUniform, low: ds[0], high: ds[1]}, nil
	case strings.HasPrefix(s, "tail("):
		ds, err := args("tail(", 3)
		if err != nil {
			return 0, d, err
		}
		return 0, distribution{shape: shapeTail, median: ds[0], p99: ds[1], p999: ds[2]}, nil
	}
	if base, err = time.ParseDuration(s); err != nil {
		return 0, d, fmt.Errorf(`latency %q: not a Go duration such as "250ms"`, s)
	}
	return base, d, nil
}

// checkLatency checks the ranges of a latency: every duration between 0
// and maxLatency, uniform's low at most its high, and a tail's median
// positive and at most its p99, itself at most its p99.9. The tail's
// longest draw, p99.9²/p99, must stay within maxLatency too.
func checkLatency(base time.Duration, d distribution) error {
	inRange := func(what string, v time.Duration) error {
		switch {
		case v < 0:
			return fmt.Errorf("%s %v: must not be negative", what, v)
		case v > maxLatency:
			return fmt.Errorf("%s %v: at most %v", what, v, maxLatency)
		}
		return nil
	}
	switch d.shape {
	case shapeFixed:
		return inRange("latency", base)
	case shapeUniform:
		if err := errors.Join(inRange("latency uniform: low", d.low), inRange("latency uniform: high", d.high)); err != nil {
			return err
		}
		if d.low > d.high {
			return fmt.Errorf("latency %s: low above high", d.format(0))
		}
	case shapeTail:
		if err := errors.Join(inRange("latency tail: median", d.median), inRange("latency tail: p99", d.p99),
			inRange("latency tail: p99.9", d.p999)); err != nil {
			return err
		}
		if d.median <= 0 || d.median > d.p99 || d.p99 > d.p999 {
			return fmt.Errorf("latency %s: want 0 < median ≤ p99 ≤ p99.9", d.format(0))
		}
		if _, ls := d.tailPoints(); ls[4] > float64(maxLatency) {
			return fmt.Errorf("latency %s: its longest draw, p99.9²/p99 = %v, is above %v", d.format(0),
				time.Duration(ls[4]).Round(time.Millisecond), maxLatency)
		}
	}
	return nil
}

// answer draws how a call of phase ph made by a client with the given
// timeout (0 for none) ends: after latency, and whether the timeout ended
// it first. A call that has not answered by the timeout, or never answers,
// times out at exactly the timeout, whenever the dependency heals.
func (ph phase) answer(timeout time.Duration, r *rand.Rand) (latency time.Duration, timedOut bool) {
	latency, answers := ph.distribution.draw(ph.latency, r)
	if timeout > 0 && (!answers || latency >= timeout) {
		return timeout, true
	}
	return latency, false
}
