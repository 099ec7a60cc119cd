package serverside

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/criticality"
)

// This file simulates a server on the limiter's clock: W handlers that
// each hold a call S and answer even when its caller has gone (the
// workload of bench/cmd/overload), open-loop Poisson arrivals in the
// criticality mix, callers that give up at a timeout. It runs the
// Limiter's own code (join, quit, Release) one event at a time, in
// order, on simulated time: no goroutine waits, and a run of seconds of
// traffic takes a fraction of a second. What it leaves out is the
// machine: a real run's holds overrun S under load, and its driver lags;
// a server may model some of that (overrun, contention, jitter).

// simClock is simulated time: Now is the time of the event being
// handled. Its timers are those of a Mock that is never moved, so they
// never fire: the only one the Limiter sets, its stall watch, wakes it
// when calls wait while none finishes for a second, and advance checks
// the same on every call.
type simClock struct {
	*clock.Mock
	now time.Time
}

func (c *simClock) Now() time.Time                  { return c.now }
func (c *simClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }

// simMix is the share of calls at each level, by Level.Index: 30 %
// SHEDDABLE, 20 % SHEDDABLE_PLUS, 40 % CRITICAL, 10 % CRITICAL_PLUS.
var simMix = [criticality.Levels]float64{0.30, 0.20, 0.40, 0.10}

// simHeavySigma is the σ of a heavy-tailed service time: a lognormal of
// mean 1 whose 99.9th percentile is 50 times its median.
var simHeavySigma = math.Log(50) / 3.090232306167813

// simTrace, when set, is called after each event of a simulated run
// with the time since its start.
var simTrace func(since time.Duration, l *Limiter)

// simPhase is a stretch of a simulated run.
type simPhase struct {
	length   time.Duration
	multiple float64 // offered rate, × the handlers' capacity at S
	scale    float64 // service time, × S; 0 means 1
	// Bursts of burstMultiple for burstLength at the end of every 2 s,
	// the rate between them lowered to keep multiple the mean; none when
	// burstLength is 0.
	burstLength   time.Duration
	burstMultiple float64
}

// jitterStretch is how long the machine's slow moments last (see
// simServer.jitter).
const jitterStretch = 20 * time.Millisecond

// simServer is what a simulated run serves: W handlers of S each.
type simServer struct {
	w       int
	s       time.Duration
	timeout time.Duration // the callers'; 1 s when 0
	heavy   bool          // service times lognormal (simHeavySigma), mean S
	// overrun is the mean of an exponential share by which each hold
	// runs past its service time, as a loaded machine's timers do.
	overrun float64
	// contention is by how much a hold runs past its service time with
	// every slot busy, in proportion to the slots busy as it starts: a
	// machine whose CPU the handlers share, where a call takes longer
	// the more are in, though none waits for a slot.
	contention float64
	// jitter is the mean share by which the machine slows every hold
	// that starts in a stretch of jitterStretch, drawn for each stretch
	// (exponential): a shared CPU's slow moments, which every call in
	// them shares.
	jitter float64
	// none runs the handlers with no limiter in front of them.
	none bool
}

func (sv simServer) capacity() float64 { return float64(sv.w) / sv.s.Seconds() }

// simPhaseResult is what a phase's calls (by arrival) came to.
type simPhaseResult struct {
	arrived, served, rejected, timedOut, gone int
	byLevel                                   [criticality.Levels][2]int // arrived, served
	latencies                                 []time.Duration            // of the served calls
	length                                    time.Duration
	capacity                                  float64 // the handlers', calls/s, at this phase's service time
	// servedAt are the times the phase's served calls were answered,
	// since the phase began (in the order of latencies), and rejectedAt
	// the arrivals of those rejected.
	servedAt, rejectedAt []time.Duration
}

// share is the phase's served calls as a share of what the handlers
// could serve in it.
func (r simPhaseResult) share() float64 {
	return float64(r.served) / (r.capacity * r.length.Seconds())
}

func (r simPhaseResult) p99() time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	l := slices.Clone(r.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(math.Ceil(0.99*float64(len(l))))-1)]
}

// levelShare is the share of a level's calls served.
func (r simPhaseResult) levelShare(level criticality.Level) float64 {
	c := r.byLevel[level.Index()]
	if c[0] == 0 {
		return 1
	}
	return float64(c[1]) / float64(c[0])
}

func (r simPhaseResult) String() string {
	return fmt.Sprintf("served %.1f %% (p99 %v), rejected %d, timed out %d, gone %d, by level %.1f/%.1f/%.1f/%.1f %%",
		100*r.share(), r.p99().Round(100*time.Microsecond), r.rejected, r.timedOut, r.gone,
		100*r.levelShare(criticality.Sheddable), 100*r.levelShare(criticality.SheddablePlus),
		100*r.levelShare(criticality.Critical), 100*r.levelShare(criticality.CriticalPlus))
}

// A simulated call's events.
const (
	simArrive = iota
	simDeadline
	simFinish
)

type simEvent struct {
	at   time.Time
	kind int
	call int
	seq  int // ties go in the order the events were made
}

type simEvents []simEvent

func (q simEvents) Len() int { return len(q) }
func (q simEvents) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q simEvents) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simEvents) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simEvents) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simCall struct {
	arrived time.Time
	level   criticality.Level
	hold    time.Duration
	phase   int
	w       *waiter // while it waits in the limiter's queue
	slot    Slot
	gone    bool // its caller gave up
	inside  bool // let into the handlers, not yet answered
}

// sim is one simulated run.
type sim struct {
	sv     simServer
	clk    *simClock
	l      *Limiter
	events simEvents
	seq    int
	calls  []simCall
	queued []int // calls waiting in the limiter's queue
	// The resource: slots free, and the calls waiting for one, in order.
	free    int
	backlog []int
	// slowdowns are the machine's, by stretch of jitterStretch since the
	// run began (see simServer.jitter).
	slowdowns []float64
	results   []simPhaseResult
	starts    []time.Time // each phase's
}

// simulate runs phases against sv with a generator seeded with seed, and
// returns each phase's result.
func simulate(sv simServer, phases []simPhase, seed uint64) ([]simPhaseResult, *Limiter) {
	if sv.timeout == 0 {
		sv.timeout = time.Second
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &simClock{Mock: clock.NewMock(), now: start}
	s := &sim{sv: sv, clk: clk, free: sv.w}
	if sv.jitter > 0 {
		var length time.Duration
		for _, ph := range phases {
			length += ph.length
		}
		jr := rand.New(rand.NewPCG(seed, 0x51095))
		for range length/jitterStretch + 1 {
			s.slowdowns = append(s.slowdowns, 1+sv.jitter*jr.ExpFloat64())
		}
	}
	if !sv.none {
		s.l = NewLimiter(clk)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	at := start
	for p, ph := range phases {
		s.starts = append(s.starts, at)
		scale := ph.scale
		if scale == 0 {
			scale = 1
		}
		s.results = append(s.results, simPhaseResult{length: ph.length, capacity: sv.capacity() / scale})
		for _, seg := range simSegments(ph, sv.capacity()) {
			t := at.Add(seg.from)
			end := at.Add(seg.to)
			for seg.rate > 0 {
				t = t.Add(time.Duration(rng.ExpFloat64() / seg.rate * float64(time.Second)))
				if !t.Before(end) {
					break
				}
				c := simCall{arrived: t, level: simLevel(rng.Float64()), phase: p}
				draw := 1.0
				if sv.heavy {
					draw = math.Exp(simHeavySigma*rng.NormFloat64() - simHeavySigma*simHeavySigma/2)
				}
				if sv.overrun > 0 {
					draw *= 1 + sv.overrun*rng.ExpFloat64()
				}
				c.hold = time.Duration(draw * scale * float64(sv.s))
				s.calls = append(s.calls, c)
				s.push(t, simArrive, len(s.calls)-1)
			}
		}
		at = at.Add(ph.length)
	}
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(simEvent)
		clk.now = e.at
		switch e.kind {
		case simArrive:
			s.arrive(e.call)
		case simDeadline:
			s.deadline(e.call)
		case simFinish:
			s.finish(e.call)
		}
		s.poll()
		if simTrace != nil && s.l != nil {
			simTrace(e.at.Sub(start), s.l)
		}
	}
	return s.results, s.l
}

// simSegment is a stretch of a phase at one rate, from and to since the
// phase began.
type simSegment struct {
	from, to time.Duration
	rate     float64
}

func simSegments(ph simPhase, capacity float64) []simSegment {
	if ph.burstLength == 0 {
		return []simSegment{{0, ph.length, ph.multiple * capacity}}
	}
	const every = 2 * time.Second
	between := (ph.multiple*float64(every) - ph.burstMultiple*float64(ph.burstLength)) / float64(every-ph.burstLength)
	var segs []simSegment
	for from := time.Duration(0); from < ph.length; from += every {
		mid := min(ph.length, from+every-ph.burstLength)
		segs = append(segs, simSegment{from, mid, max(0, between) * capacity})
		if mid < ph.length {
			segs = append(segs, simSegment{mid, min(ph.length, from+every), ph.burstMultiple * capacity})
		}
	}
	return segs
}

func simLevel(u float64) criticality.Level {
	for i, share := range simMix {
		if u < share {
			return criticality.Sheddable + criticality.Level(i)
		}
		u -= share
	}
	return criticality.CriticalPlus
}

func (s *sim) push(at time.Time, kind, call int) {
	s.seq++
	heap.Push(&s.events, simEvent{at: at, kind: kind, call: call, seq: s.seq})
}

func (s *sim) result(i int) *simPhaseResult { return &s.results[s.calls[i].phase] }

func (s *sim) arrive(i int) {
	c := &s.calls[i]
	r := s.result(i)
	r.arrived++
	r.byLevel[c.level.Index()][0]++
	s.push(c.arrived.Add(s.sv.timeout), simDeadline, i)
	if s.l == nil {
		s.enter(i, Slot{})
		return
	}
	slot, w, err := s.l.join(c.level)
	switch {
	case err != nil:
		r.rejected++
		r.rejectedAt = append(r.rejectedAt, c.arrived.Sub(s.starts[c.phase]))
	case w != nil:
		c.w = w
		s.queued = append(s.queued, i)
	default:
		s.enter(i, slot)
	}
}

// enter lets call i into the handlers, which wait for a slot of the
// resource.
func (s *sim) enter(i int, slot Slot) {
	c := &s.calls[i]
	c.slot, c.inside = slot, true
	if s.free > 0 {
		s.free--
		s.push(s.clk.now.Add(s.held(i)), simFinish, i)
		return
	}
	s.backlog = append(s.backlog, i)
}

// held is how long call i holds the slot it has just taken, with the
// slots busy now (its own included).
func (s *sim) held(i int) time.Duration {
	hold := s.calls[i].hold
	if s.sv.contention > 0 {
		busy := float64(s.sv.w-s.free) / float64(s.sv.w)
		hold = time.Duration(float64(hold) * (1 + s.sv.contention*busy))
	}
	if k := int(s.clk.now.Sub(s.starts[0]) / jitterStretch); k < len(s.slowdowns) {
		hold = time.Duration(float64(hold) * s.slowdowns[k])
	}
	return hold
}

func (s *sim) deadline(i int) {
	c := &s.calls[i]
	if c.w != nil && s.l.quit(c.w) {
		putWaiter(c.w)
		c.w = nil
		s.queued = slices.DeleteFunc(s.queued, func(j int) bool { return j == i })
		s.result(i).timedOut++
		return
	}
	if c.inside {
		c.gone = true
		s.result(i).timedOut++
	}
}

// finish ends call i's hold: the handler answers, its caller there or
// not, and gives its slots back.
func (s *sim) finish(i int) {
	c := &s.calls[i]
	if len(s.backlog) > 0 {
		next := s.backlog[0]
		s.backlog = s.backlog[1:]
		s.push(s.clk.now.Add(s.held(next)), simFinish, next)
	} else {
		s.free++
	}
	c.inside = false
	r := s.result(i)
	if c.gone {
		r.gone++
	} else {
		r.served++
		r.byLevel[c.level.Index()][1]++
		r.latencies = append(r.latencies, s.clk.now.Sub(c.arrived))
		r.servedAt = append(r.servedAt, s.clk.now.Sub(s.starts[c.phase]))
	}
	c.slot.Release(!c.gone)
}

// poll takes the calls the limiter has let in or rejected out of its
// queue.
func (s *sim) poll() {
	if len(s.queued) == 0 {
		return
	}
	s.queued = slices.DeleteFunc(s.queued, func(i int) bool {
		c := &s.calls[i]
		select {
		case <-c.w.done:
		default:
			return false
		}
		state := c.w.state
		putWaiter(c.w)
		c.w = nil
		if state == rejected {
			r := s.result(i)
			r.rejected++
			r.rejectedAt = append(r.rejectedAt, c.arrived.Sub(s.starts[c.phase]))
		} else {
			s.enter(i, Slot{l: s.l, start: s.clk.now})
		}
		return true
	})
}
