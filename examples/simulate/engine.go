package main

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker/internal/tuning"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/proba"
)

// epoch is where the virtual clock starts, unless a trace gives its own
// times.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// virtualClock is a clock the simulation moves by hand. Unlike clock.Mock it
// does not pause on every step, so minutes of traffic simulate in moments.
// It is used from one goroutine only. Breakers read Now alone; the
// embedded clock.Clock, nil, stands for the methods of the interface that
// they never call.
type virtualClock struct {
	clock.Clock
	now time.Time
}

func (c *virtualClock) Now() time.Time { return c.now }

// breakerConfig is what the breaker under test is built from.
type breakerConfig struct {
	k          float64
	protection int
	window     time.Duration
	buckets    int
	aggression float64
	countDrops bool
	trust      bool          // trust agreeing recent buckets
	evidence   int           // calls the formula reads back for; 0 for the window alone
	horizon    time.Duration // how far back; 0 for the breaker's default
	plain      bool          // the plain formula: overrides aggression and countDrops
	// slowCall is WithSlowCall's threshold: a call slower counts as a
	// failure, one out longer counts against the dependency before it
	// returns; 0 leaves the option out, for the normal the breaker learns.
	slowCall time.Duration
	seed     uint64
	// without is the rules of the judge turned off (-ablate); none by
	// default.
	without evidence.Rules
}

// knob returns the breaker option that sets k.
func knob(k tuning.Knob) breaker.Option { return tuning.Option(k).(breaker.Option) }

// options returns the breaker options bc describes.
func (bc breakerConfig) options() []breaker.Option {
	opts := []breaker.Option{breaker.WithK(bc.k), breaker.WithProtection(bc.protection),
		breaker.WithWindow(bc.window),
		knob(tuning.Buckets(bc.buckets)), knob(tuning.Aggression(bc.aggression)),
		knob(tuning.DropsCounted(bc.countDrops)), knob(tuning.TrustRecent(bc.trust)),
		knob(tuning.Evidence{Calls: bc.evidence, Horizon: bc.horizon})}
	if bc.without != 0 {
		opts = append(opts, knob(tuning.Without(bc.without)))
	}
	if bc.plain {
		opts = append(opts, breaker.WithPlainFormula())
	}
	if bc.slowCall != 0 {
		opts = append(opts, breaker.WithSlowCall(bc.slowCall))
	}
	return opts
}

// failureReason is the reason every failed call is rejected with; a constant
// keeps the breaker's hot path free of allocations.
const failureReason = "dependency failed"

// overloadReason is the reason a call the dependency turned away for lack
// of capacity is rejected with, through [srebreaker.RejectOverloaded], when
// its phase says it is overloaded (-says-overloaded, "saysOverloaded").
const overloadReason = "overloaded"

// timeoutReason is the reason a call the client's timeout ended is rejected
// with: the text of context.DeadlineExceeded, which such a call returns.
const timeoutReason = "context deadline exceeded"

// driver runs calls through a breaker on a virtual clock. Calls with a
// latency stay in flight, and their outcomes reach the breaker at admission
// + latency, in that order, before any later call is decided.
type driver struct {
	clk      *virtualClock
	b        breaker.Breaker
	ctxs     [4]context.Context // a context per level, in the order of levels
	inFlight callHeap
	seq      uint64       // orders calls finishing at the same instant by admission
	gauge    *flightGauge // counts the calls in flight; nil for none. A fleet's drivers share one
}

// flightGauge counts the calls admitted whose outcome the breaker has not
// heard yet, and the most there were at once.
type flightGauge struct {
	now, peak int
	peakAt    time.Time // when peak was first reached
}

func (g *flightGauge) add(n int, at time.Time) {
	if g == nil {
		return
	}
	g.now += n
	if g.now > g.peak {
		g.peak, g.peakAt = g.now, at
	}
}

// newDriver builds the breaker with the clock at start: the window's bucket
// boundaries count from there.
func newDriver(bc breakerConfig, start time.Time) (*driver, error) {
	clk := &virtualClock{now: start}
	b, err := breaker.New(append(bc.options(), breaker.WithName("simulated"),
		breaker.WithClock(clk), breaker.WithProba(proba.NewSeeded(bc.seed)))...)
	if err != nil {
		return nil, err
	}
	d := &driver{clk: clk, b: b, gauge: &flightGauge{}}
	for i, c := range levels {
		d.ctxs[i] = criticality.With(context.Background(), c)
	}
	return d, nil
}

// allowLevel is allow for a call at levels[l], asked through AllowCtx.
func (d *driver) allowLevel(at time.Time, l int) srebreaker.Promise {
	d.settle(at)
	d.clk.now = at
	p, err := d.b.AllowCtx(d.ctxs[l])
	if err != nil {
		return nil
	}
	return p
}

// allow moves the clock to at, after reporting the calls that finished by
// then, and asks the breaker about a call arriving at at. The promise is nil
// if the call is dropped.
func (d *driver) allow(at time.Time) srebreaker.Promise {
	d.settle(at)
	d.clk.now = at
	p, err := d.b.Allow()
	if err != nil {
		return nil
	}
	return p
}

// finish reports the outcome of an admitted call that arrived at at: now if
// latency is 0, otherwise once the clock reaches at + latency. overloaded
// says a failed call was turned away by a dependency that said it was
// overloaded; it is ignored when ok.
func (d *driver) finish(p srebreaker.Promise, at time.Time, latency time.Duration, ok, overloaded bool) {
	if latency <= 0 {
		report(p, ok, overloaded, false)
		return
	}
	d.push(call{done: at.Add(latency), p: p, ok: ok, overloaded: overloaded})
}

// timeOut reports an admitted call that arrived at at as failed by the
// client's timeout (context deadline exceeded), once the clock reaches at
// + timeout.
func (d *driver) timeOut(p srebreaker.Promise, at time.Time, timeout time.Duration) {
	d.push(call{done: at.Add(timeout), p: p, timedOut: true})
}

// push puts c in flight; its key and seq are set here.
func (d *driver) push(c call) {
	d.seq++
	c.key, c.seq = c.done.UnixNano(), d.seq
	d.inFlight.push(c)
	d.gauge.add(1, d.clk.now)
}

// settle reports, in order, the outcomes of the calls in flight that finish
// at or before t, each with the clock at its finishing time.
func (d *driver) settle(t time.Time) {
	for len(d.inFlight) > 0 && !d.inFlight[0].done.After(t) {
		c := d.inFlight.pop()
		d.clk.now = c.done
		d.gauge.add(-1, c.done)
		report(c.p, c.ok, c.overloaded, c.timedOut)
	}
}

// drain reports every call still in flight.
func (d *driver) drain() {
	for len(d.inFlight) > 0 {
		c := d.inFlight.pop()
		d.clk.now = c.done
		d.gauge.add(-1, c.done)
		report(c.p, c.ok, c.overloaded, c.timedOut)
	}
}

// report tells the breaker a call's outcome: a success, a timeout, a
// failure the dependency said was for overload, or any other failure. A
// timeout is reported as one whatever the dependency would have said.
func report(p srebreaker.Promise, ok, overloaded, timedOut bool) {
	switch {
	case ok:
		p.Accept()
	case timedOut:
		p.Reject(timeoutReason)
	case overloaded:
		srebreaker.RejectOverloaded(p, overloadReason)
	default:
		p.Reject(failureReason)
	}
}

// call is an admitted call whose outcome the breaker has not seen yet.
type call struct {
	done time.Time
	key  int64 // done in Unix nanoseconds, which compare faster
	seq  uint64
	p    srebreaker.Promise
	ok   bool
	// overloaded: a failure the dependency said was for overload;
	// reported with overloadReason through srebreaker.RejectOverloaded.
	overloaded bool
	// timedOut: the client's timeout ended the call; reported as a
	// failure with timeoutReason.
	timedOut bool
}

func (c *call) before(o *call) bool {
	if c.key != o.key {
		return c.key < o.key
	}
	return c.seq < o.seq
}

// callHeap is a binary min-heap of calls by (done, seq). It is typed rather
// than built on container/heap, whose interface boxes every call.
type callHeap []call

func (h *callHeap) push(c call) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].before(&s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *callHeap) pop() call {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = call{}
	s = s[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l].before(&s[least]) {
			least = l
		}
		if r < len(s) && s[r].before(&s[least]) {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}

// counts are the calls of one stretch of time, by the time they arrived.
type counts struct {
	phase                                string
	offered, allowed, succeeded, dropped int
	falseDrops                           int            // dropped calls a trace says would have succeeded
	timedOut                             int            // admitted calls the client's timeout ended
	levels                               [4]levelCounts // by criticality, in the order of levels; with a mix only
}

func (c *counts) add(o counts) {
	c.offered += o.offered
	c.allowed += o.allowed
	c.succeeded += o.succeeded
	c.dropped += o.dropped
	c.falseDrops += o.falseDrops
	c.timedOut += o.timedOut
	for i := range c.levels {
		c.levels[i].add(o.levels[i])
	}
}

// chartTenths is how many 100 ms slots a timeline keeps: runs up to a
// minute are charted at that resolution, longer ones per second or coarser.
const chartTenths = 600

// timeline counts calls per second since the start, and per 100 ms over the
// first minute.
type timeline struct {
	seconds []counts
	tenths  []counts
}

// add counts c for a call that arrived at d since the start. A second is
// labelled with the phase of its first call.
func (tl *timeline) add(d time.Duration, c counts) {
	s := int(d / time.Second)
	for len(tl.seconds) <= s {
		tl.seconds = append(tl.seconds, counts{phase: c.phase})
	}
	if tl.seconds[s].offered == 0 && c.phase != "" {
		tl.seconds[s].phase = c.phase
	}
	tl.seconds[s].add(c)
	if t := int(d / slot); t < chartTenths {
		for len(tl.tenths) <= t {
			tl.tenths = append(tl.tenths, counts{})
		}
		tl.tenths[t].add(c)
	}
}
