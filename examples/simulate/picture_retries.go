package main

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/retry"
)

// The retry picture's scenario: retryRate calls a second, each retried by
// package retry, against a dependency that fails every attempt from
// retryOutageFrom to retryOutageTo.
const (
	retryRate       = 1000
	retryLength     = 30 * time.Second
	retryOutageFrom = 5 * time.Second
	retryOutageTo   = 20 * time.Second
	retryBin        = 100 * time.Millisecond
)

// errRetryOutage is what the dependency answers in the outage.
var errRetryOutage = errors.New("dependency failed")

// scheduler runs goroutines one at a time in virtual time: each call of
// the scenario runs retry.Call in a goroutine of its own, and a goroutine
// runs only while the scheduler waits for it, until it waits on the clock
// (After) or ends. The order of events is then fixed by the times they are
// due and the order they were made in, so a run is the same every time.
type scheduler struct {
	clock.Clock // nil: the breaker and retry read Now and After alone
	now         time.Time
	events      eventQueue
	seq         int
	yield       chan struct{} // a goroutine's turn is over
}

// event is a timer due at at, or a call to start.
type event struct {
	at    time.Time
	seq   int
	fire  chan time.Time // a timer's channel, or nil
	start func()         // a call, run in a goroutine of its own
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func (s *scheduler) Now() time.Time { return s.now }

// After ends the calling goroutine's turn: it is resumed when d has
// passed in virtual time.
func (s *scheduler) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	s.push(event{at: s.now.Add(d), fire: ch})
	s.yield <- struct{}{}
	return ch
}

func (s *scheduler) push(e event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}

// run runs every event in time order, each until its goroutine's turn ends.
func (s *scheduler) run() {
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(event)
		s.now = e.at
		if e.fire != nil {
			e.fire <- e.at
		} else {
			go func() {
				e.start()
				s.yield <- struct{}{}
			}()
		}
		<-s.yield
	}
}

// retrySetup is one way of retrying in the picture.
var retrySetups = []struct {
	id, label, style string
	short            string // the label of its amplification
	policy           []retry.Option
	breaker          bool // through a breaker
	shedding         bool // the breaker sheds; else it is overridden to admit every call
}{
	{"naive", "3 attempts, no budget, no breaker", `stroke="#d62728" stroke-width="1.5"`, "naive retries",
		[]retry.Option{retry.WithAttempts(3), retry.WithoutBudget()}, false, false},
	{"budget", "3 attempts, retry budget 10%", `stroke="#ff7f0e" stroke-width="1.5"`, "retry budget",
		[]retry.Option{retry.WithAttempts(3)}, true, false},
	{"breaker", "3 attempts, budget 10%, breaker shedding", `stroke="#1f77b4" stroke-width="2"`, "budget and breaker",
		[]retry.Option{retry.WithAttempts(3)}, true, true},
}

// retryRun returns the attempts that reached the dependency in each bin
// of the scenario, and how many per call of the outage.
func retryRun(opts []retry.Option, throughBreaker, shedding bool) (bins []int, amplification float64) {
	s := &scheduler{now: epoch, yield: make(chan struct{})}
	pol := retry.MustNew(append(opts, retry.WithClock(s), retry.WithRand(rand.NewPCG(1, 2)))...)
	var b breaker.Breaker
	if throughBreaker {
		b = breaker.MustNew(breaker.WithName("dependency"), breaker.WithClock(s), breaker.WithProba(proba.NewSeeded(1)))
		if !shedding {
			if err := b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: override.MaxTTL}); err != nil {
				panic(err) // a valid Spec
			}
		}
	}
	bins = make([]int, retryLength/retryBin)
	var outageCalls, outageAttempts int
	req := func(context.Context) (struct{}, error) {
		t := s.now.Sub(epoch)
		if i := int(t / retryBin); i < len(bins) {
			bins[i]++
		}
		if t >= retryOutageFrom && t < retryOutageTo {
			outageAttempts++
			return struct{}{}, errRetryOutage
		}
		return struct{}{}, nil
	}
	gap := time.Second / retryRate
	for t := time.Duration(0); t < retryLength; t += gap {
		if t >= retryOutageFrom && t < retryOutageTo {
			outageCalls++
		}
		s.push(event{at: epoch.Add(t), start: func() { _, _ = retry.Call(context.Background(), pol, b, req) }})
	}
	s.run()
	return bins, float64(outageAttempts) / float64(outageCalls)
}

// drawRetryOutage draws the load each of retrySetups puts on the
// dependency through the scenario.
func drawRetryOutage(w io.Writer) {
	c := lineChart{
		title: "What retries do to an outage: the load that reaches a failing dependency",
		subtitle: fmt.Sprintf("%d calls/s, each through retry.Call (package retry, backoff 50 ms to 1 s) and, but for the first, "+
			"a breaker (package breaker, defaults); the dependency fails every attempt from %v to %v. "+
			"Virtual time, seeded. The labels give the attempts per call in the outage.", retryRate, retryOutageFrom, retryOutageTo),
		xLabel: "time since the start (s)",
		yLabel: "attempts at the dependency per second (100 ms bins)",
		xMax:   retryLength.Seconds(), xDivisions: 6,
		xTick: func(v float64) string { return fmt.Sprintf("%gs", v) },
		yTick: func(v float64) string { return fmt.Sprintf("%g", v) },
		bands: []numBand{{"healthy", 0, retryOutageFrom.Seconds()}, {"outage: every attempt fails", retryOutageFrom.Seconds(), retryOutageTo.Seconds()},
			{"healed", retryOutageTo.Seconds(), retryLength.Seconds()}},
	}
	offered := plotLine{id: "offered", label: "calls made (first attempts)", style: `stroke="#b0b0b0" stroke-width="4"`}
	for i := 0; i < int(retryLength/retryBin); i++ {
		offered.xs = append(offered.xs, (time.Duration(i)*retryBin + retryBin/2).Seconds())
		offered.ys = append(offered.ys, retryRate)
	}
	c.lines = append(c.lines, offered)
	top := float64(retryRate)
	type label struct {
		amp   float64
		level float64
		style string
		short string
	}
	var labels []label
	for _, rs := range retrySetups {
		bins, amp := retryRun(rs.policy, rs.breaker, rs.shedding)
		l := plotLine{id: rs.id, label: rs.label, style: rs.style}
		var sum float64
		var n int
		for i, v := range bins {
			at := time.Duration(i)*retryBin + retryBin/2
			l.xs = append(l.xs, at.Seconds())
			perSecond := float64(v) / retryBin.Seconds()
			l.ys = append(l.ys, perSecond)
			top = max(top, perSecond)
			if at >= retryOutageFrom+2*time.Second && at < retryOutageTo {
				sum += perSecond
				n++
			}
		}
		c.lines = append(c.lines, l)
		labels = append(labels, label{amp, sum / float64(n), rs.style, rs.short})
	}
	c.yMax, c.yDivisions = niceCeil(1.1 * top)
	mid := (retryOutageFrom + retryOutageTo).Seconds() / 2
	for _, lb := range labels {
		fill := "#222222"
		if i := strings.Index(lb.style, `stroke="`); i >= 0 {
			fill = lb.style[i+8 : i+15]
		}
		y := lb.level + 0.05*c.yMax
		c.notes = append(c.notes, note{x: mid, y: y, anchor: "middle", fill: fill,
			text: fmt.Sprintf("%s: %.2g× the calls", lb.short, math.Round(lb.amp*100)/100)})
	}
	writeLineChart(w, c)
}
