package main

import (
	"fmt"
	"github.com/srebreaker/srebreaker/internal/tuning"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// The phases of the scenario the flags describe, in the order they run.
const (
	healthy = iota
	outage
	healed
	overload
	phaseCount
)

// slot is the resolution of the shed and recovery timings.
const slot = 100 * time.Millisecond

type config struct {
	breakerConfig
	fleetConfig

	// The scenario the flags describe: phases[p] gives only a name and a
	// length, the rest comes from rate, errorRate, capacity and
	// saysOverloaded.
	rate      int     // requests offered per second
	errorRate float64 // share of the served calls failing outside the outage
	capacity  float64 // share of the offered rate served while overloaded
	phases    [phaseCount]phase
	mix       mix  // the calls' criticalities (-mix); replaces a scenario file's
	fifo      bool // -fifo: the dependency serves calls first come, first served; adds to a scenario file's
	shuffle   bool // -shuffle: each slot's levels in a seeded random order; adds to a scenario file's
	// saysOverloaded (-says-overloaded): the overloaded dependency rejects
	// the calls beyond its capacity saying so, and the breaker hears of it
	// through srebreaker.RejectOverloaded; false fails them as any other.
	saysOverloaded bool

	scenarioFile string // replaces the flags' scenario when set
	// fixed is scenarioFile's scenario, read already (-ablation's, from
	// the files built in); nil to read the file.
	fixed      *scenario
	replayFile string // replay this trace instead of simulating
	svgFile    string // write a chart here
	recordFile string // write the simulated calls here as a trace
	quiet      bool
	ablation   bool           // -ablation: measure each rule of the judge out
	ablate     []ablationRule // -ablate: the rules turned off, which breakerConfig holds

	named string // a scenario of namedScenarios, at rate; replaces the flags' scenario when set
	// latency (-latency) replaces the latency of every phase of the flags'
	// scenario, or of a named scenario's phases in which the dependency is
	// well; nil leaves them as they are.
	latency *wellLatency
	// timeout (-timeout) is the client's, replacing a scenario's; nil
	// leaves it as it is (none for the flags' scenario).
	timeout *time.Duration

	// A sweep, when either is set: the scenario at each rate (the
	// built-in scenario's) for each seed.
	rates []int
	seeds []uint64
}

func defaultConfig() config {
	return config{
		breakerConfig: breakerConfig{
			k:          breaker.DefaultK,
			protection: breaker.DefaultProtection,
			window:     breaker.DefaultWindow,
			buckets:    tuning.DefaultBuckets,
			aggression: tuning.DefaultAggression,
			countDrops: true,
			trust:      true,
			evidence:   tuning.DefaultEvidence,
			seed:       1,
		},
		fleetConfig: fleetConfig{clients: 1, share: true},
		rate:        2000,
		errorRate:   0.01,
		capacity:    0.5,
		phases: [phaseCount]phase{
			healthy:  {name: "healthy", length: 5 * time.Second},
			outage:   {name: "outage", length: 10 * time.Second},
			healed:   {name: "healed", length: 10 * time.Second},
			overload: {name: "overload", length: 10 * time.Second},
		},
	}
}

// validate checks the flags that describe the built-in scenario.
func (c config) validate() error {
	switch {
	case c.rate < 1 || c.rate > maxRate:
		return fmt.Errorf("-rate %d: must be between 1 and %d", c.rate, maxRate)
	case !(c.errorRate >= 0 && c.errorRate <= 1):
		return fmt.Errorf("-errors %v: must be between 0 and 1", c.errorRate)
	case !(c.capacity >= 0 && c.capacity <= 1):
		return fmt.Errorf("-capacity %v: must be between 0 and 1", c.capacity)
	}
	if err := c.fleetConfig.validate(); err != nil {
		return err
	}
	var total time.Duration
	for _, p := range c.phases {
		if p.length < 0 {
			return fmt.Errorf("-%s %v: must not be negative", p.name, p.length)
		}
		total += p.length
	}
	if total > maxDuration {
		return fmt.Errorf("phases add up to %v: at most 24h can be simulated", total)
	}
	if requests := total.Seconds() * float64(c.rate) * float64(c.clients); requests > maxRequests {
		if c.clients > 1 {
			return fmt.Errorf("-rate %d for -clients %d over %v makes %.0f requests: at most %d can be simulated",
				c.rate, c.clients, total, requests, maxRequests)
		}
		return fmt.Errorf("-rate %d over %v makes %.0f requests: at most %d can be simulated", c.rate, total, requests, maxRequests)
	}
	return nil
}

// scenario returns the scenario to simulate: the file's if one is given,
// otherwise the four phases of the flags, each playing the role it is named
// after.
func (c config) scenario() (scenario, error) {
	if c.scenarioFile != "" {
		s, err := scenario{}, error(nil)
		if c.fixed != nil {
			s = *c.fixed
		} else if s, err = loadScenario(c.scenarioFile); err != nil {
			return s, err
		}
		if c.mix.set() {
			s.mix = c.mix
		}
		s.fifo, s.shuffle = s.fifo || c.fifo, s.shuffle || c.shuffle
		if c.timeout != nil {
			s.timeout = *c.timeout
		}
		return s, s.validate()
	}
	if c.named != "" {
		return c.namedScenario()
	}
	if err := c.validate(); err != nil {
		return scenario{}, err
	}
	var s scenario
	if c.timeout != nil {
		s.timeout = *c.timeout
	}
	for i, p := range c.phases {
		p.role = role(i + 1)
		p.rate = float64(c.rate)
		p.capacity = math.Inf(1)
		if c.latency != nil {
			p.latency, p.distribution = c.latency.base, c.latency.distribution
		}
		p.errors = c.errorRate // a dependency fails a few calls before its outage and after it
		switch i {
		case outage:
			p.errors = 1
		case overload: // of the fleet's offered rate, with -clients
			p.capacity = c.capacity * float64(c.rate) * float64(max(c.clients, 1))
			p.saysOverloaded = c.saysOverloaded // the only phase with a capacity
		}
		s.phases = append(s.phases, p)
	}
	s.mix, s.fifo, s.shuffle = c.mix, c.fifo, c.shuffle
	return s, s.validate()
}

// namedScenario returns the named scenario c selects, at c's rate, with
// c's timeout and latency while well if given.
func (c config) namedScenario() (scenario, error) {
	n, ok := namedScenarios[c.named]
	if !ok {
		return scenario{}, fmt.Errorf("-scenario %s: no such built-in scenario; the names are %s", c.named, namedScenarioList())
	}
	if c.rate < 1 || c.rate > maxRate {
		return scenario{}, fmt.Errorf("-rate %d: must be between 1 and %d", c.rate, maxRate)
	}
	well, timeout := n.well, namedTimeout
	if c.latency != nil {
		well = *c.latency
	}
	if c.timeout != nil {
		timeout = *c.timeout
	}
	s := n.build(c.named, c.rate, timeout, well)
	s.mix, s.fifo, s.shuffle = c.mix, c.fifo, c.shuffle
	return s, s.validate()
}

type result struct {
	scenario scenario
	fleet    *fleetResult // nil for one breaker
	timeline
	phases []counts   // per phase of the scenario
	slots  [][]counts // per phase, per 100 ms since it began, for the timings
	// peakInFlight is the most calls admitted at once whose outcome the
	// breaker had not heard yet (all clients' in a fleet), first reached
	// peakAt since the start.
	peakInFlight int
	peakAt       time.Duration
}

// simulate runs the scenario cfg gives through a breaker built from cfg.
func simulate(cfg config) (*result, error) {
	sc, err := cfg.scenario()
	if err != nil {
		return nil, err
	}
	if cfg.clients > 1 {
		res, fr, err := simulateFleet(cfg.breakerConfig, cfg.fleetConfig, sc)
		if err != nil {
			return nil, err
		}
		res.fleet = fr
		return res, nil
	}
	return simulateScenario(cfg.breakerConfig, sc, nil)
}

// simulateScenario runs sc through a breaker built from bc. Requests arrive
// evenly spaced within each phase; each is offered to the breaker at its
// arrival time on a virtual clock and, if admitted, served or failed by the
// dependency then, with its outcome reported to the breaker after the
// phase's latency. If trace is not nil, every offered call is written to it
// as a row of a trace (see [traceWriter.write]), dropped calls with the
// outcome they would have had.
func simulateScenario(bc breakerConfig, sc scenario, trace io.Writer) (*result, error) {
	d, err := newDriver(bc, epoch)
	if err != nil {
		return nil, err
	}
	var tw *traceWriter
	if trace != nil {
		tw = newTraceWriter(trace, sc.hasLatency())
	}
	// The dependency's own draws, apart from the breaker's: which served
	// calls fail. whatIf decides, for a trace, how dropped calls would
	// have fared, without disturbing the draws of the calls that ran.
	dependencyRand := rand.New(rand.NewPCG(bc.seed, bc.seed+1))
	whatIf := rand.New(rand.NewPCG(bc.seed, bc.seed+2))
	// The calls' latencies, drawn from sources of their own, so that a
	// fixed latency, which draws nothing, leaves the other draws as they
	// were.
	latencyRand := rand.New(rand.NewPCG(bc.seed, bc.seed+4))
	whatIfLatency := rand.New(rand.NewPCG(bc.seed, bc.seed+5))

	res := &result{scenario: sc, phases: make([]counts, len(sc.phases)), slots: make([][]counts, len(sc.phases))}
	length := sc.length()
	for s := time.Duration(0); s < length; s += time.Second {
		res.seconds = append(res.seconds, counts{phase: sc.phases[sc.phaseAt(s)].name})
	}
	var mixer *mixer // nil for calls without a criticality
	if sc.mix.set() {
		mixer = newMixer(sc.mix)
		if sc.shuffle {
			mixer.shuffle = rand.New(rand.NewPCG(bc.seed, bc.seed+3))
		}
	}
	var elapsed time.Duration // since the start, at the beginning of the phase
	for p, ph := range sc.phases {
		res.phases[p].phase = ph.name
		res.slots[p] = make([]counts, (ph.length+slot-1)/slot)
		capacity := newLevelCapacity(ph.capacity)
		n := ph.requests()
		for i := range n {
			since := ph.arrival(i) // since the phase began
			at := elapsed + since
			slotIndex := int(since / slot)
			c := counts{phase: ph.name, offered: 1}
			var promise srebreaker.Promise
			level := -1
			if mixer != nil {
				if sc.shuffle && (i == 0 || ph.arrival(i-1)/slot != since/slot) { // the slot's first call
					mixer.deal(slotCalls(ph, i))
				}
				level = mixer.next()
				promise = d.allowLevel(epoch.Add(at), level)
			} else {
				promise = d.allow(epoch.Add(at))
			}
			if promise != nil {
				c.allowed = 1
				var served bool
				if level < 0 || sc.fifo {
					served = capacity.take(since)
				} else {
					served = capacity.takeFor(since, level)
				}
				ok := served && !fails(dependencyRand, ph.errors)
				latency, timedOut := ph.answer(sc.timeout, latencyRand)
				c.finish(d, promise, epoch.Add(at), latency, ok, ph.saysOverloaded && !served, timedOut)
				if tw != nil {
					tw.write(at, c.succeeded == 1, latency)
				}
			} else {
				c.dropped = 1
				if tw != nil {
					room := capacity.hasRoom(since)
					if level >= 0 && !sc.fifo {
						room = capacity.roomFor(since, level)
					}
					ok := room && !fails(whatIf, ph.errors)
					latency, timedOut := ph.answer(sc.timeout, whatIfLatency)
					tw.write(at, ok && !timedOut, latency)
				}
			}
			if level >= 0 {
				c.levels[level] = levelCounts{offered: 1, allowed: c.allowed, succeeded: c.succeeded, dropped: c.dropped}
			}
			res.timeline.add(at, c)
			res.phases[p].add(c)
			res.slots[p][slotIndex].add(c)
		}
		elapsed += ph.length
	}
	d.drain()
	res.peakInFlight, res.peakAt = d.gauge.peak, d.gauge.peakAt.Sub(epoch)
	if tw != nil {
		if err := tw.flush(); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// finish counts an admitted call as succeeded if ok and not timedOut, or as
// timed out, and has d report it after latency: the call's answer, or the
// client's timeout. overloaded says the call failed because the dependency
// had no room for it and said so: it is reported with
// srebreaker.RejectOverloaded, unless the client's timeout ended it first.
func (c *counts) finish(d *driver, p srebreaker.Promise, at time.Time, latency time.Duration, ok, overloaded, timedOut bool) {
	if timedOut {
		c.timedOut = 1
		d.timeOut(p, at, latency)
		return
	}
	if ok {
		c.succeeded = 1
	}
	d.finish(p, at, latency, ok, overloaded)
}

// fails draws whether a served call fails. It draws only for a rate
// strictly between 0 and 1.
func fails(r *rand.Rand, rate float64) bool {
	switch {
	case rate >= 1:
		return true
	case rate <= 0:
		return false
	}
	return r.Float64() < rate
}

// capacity is the dependency's limit: it serves at most perSecond calls a
// second on average, and fails the calls beyond. Room to serve is earned
// continuously, perSecond·Δt as time passes, starting with room for one
// call (none at a capacity of 0); each call served spends one, and room
// left unused is kept up to a second's worth and one call (perSecond+1
// calls, so that the fraction earned beyond a whole call is not lost when
// calls are sparse). So the limit means the same at any rate: at 2 calls/s offered and
// a capacity of 1/s, every other call is served, and a call the breaker
// drops leaves its room to the calls after it, as it would with a
// dependency whose workers wait for work, instead of wasting it.
//
// It replaces a limit counted per 100 ms slot, round(perSecond/10) calls
// each, room left unused lost at the slot's end: below 5 calls/s of
// capacity, the slots with room were never the slots with calls, and
// nothing was served at all.
type capacity struct {
	perSecond float64 // +Inf for no limit
	keep      float64 // room kept at most, in calls: capacityKeep's worth, plus one
	room      float64 // at at
	at        time.Duration
}

// capacityKeep is how long unused capacity stays available.
const capacityKeep = time.Second

// roomEpsilon absorbs the rounding of room earned in many small steps, so
// that 0.2 s at 5 calls/s earns exactly one call.
const roomEpsilon = 1e-9

func newCapacity(perSecond float64) *capacity {
	c := &capacity{perSecond: perSecond, keep: 1 + perSecond*capacityKeep.Seconds()}
	if perSecond > 0 {
		c.room = 1
	}
	return c
}

// advance earns the room of the time from c.at to since (since the phase
// began; calls come in order).
func (c *capacity) advance(since time.Duration) {
	if since > c.at {
		c.room = min(c.keep, c.room+c.perSecond*(since-c.at).Seconds())
		c.at = since
	}
}

// hasRoom reports whether a call at since would be served.
func (c *capacity) hasRoom(since time.Duration) bool {
	if math.IsInf(c.perSecond, 1) {
		return true
	}
	c.advance(since)
	return c.room >= 1-roomEpsilon
}

// take serves a call at since if there is room.
func (c *capacity) take(since time.Duration) bool {
	if !c.hasRoom(since) {
		return false
	}
	if !math.IsInf(c.perSecond, 1) {
		c.room--
	}
	return true
}

// sustainedSlots is how many slots in a row a share must hold for the
// timings to count it reached: one slot may get there by chance.
const sustainedSlots = 3

// sustainedFrom returns the time from the start of phase p to the end of
// the first slot from which ok holds for sustainedSlots slots in a row, and
// whether there was one. Slots that offered nothing are skipped: they
// neither count towards the run nor end it.
func (r *result) sustainedFrom(p int, ok func(c counts) bool) (time.Duration, bool) {
	first, run := 0, 0
	for i, c := range r.slots[p] {
		if c.offered == 0 {
			continue
		}
		if !ok(c) {
			run = 0
			continue
		}
		if run == 0 {
			first = i
		}
		run++
		if run == sustainedSlots {
			return time.Duration(first+1) * slot, true
		}
	}
	return 0, false
}

// figures are the six figures of the comparison row; see the package
// comment for their definitions. A figure is NaN when the scenario has no
// phase with its role, or that phase offered nothing.
type figures struct {
	falseDrops         float64 // calls dropped during the healthy phase
	outageReached      float64 // % of the outage's calls admitted
	shedAfter          float64 // seconds until 90 % was shed, sustained; +Inf if never during the outage
	admittedAfter      float64 // seconds after healing until 95 % was admitted, sustained; +Inf if never
	goodput            float64 // % of the overload phase's capacity that succeeded
	attemptsPerSuccess float64 // admitted per succeeded call while overloaded; +Inf if none succeeded
}

// phaseOf returns the index of the phase with role r that offered calls, or
// -1.
func (r *result) phaseOf(ro role) int {
	for i, p := range r.scenario.phases {
		if p.role == ro && r.phases[i].offered > 0 {
			return i
		}
	}
	return -1
}

func (r *result) figures() figures {
	nan := math.NaN()
	f := figures{nan, nan, nan, nan, nan, nan}
	timing := func(p int, ok func(c counts) bool) float64 {
		if d, found := r.sustainedFrom(p, ok); found {
			return d.Seconds()
		}
		return math.Inf(1)
	}
	if p := r.phaseOf(roleHealthy); p >= 0 {
		f.falseDrops = float64(r.phases[p].dropped)
	}
	if p := r.phaseOf(roleOutage); p >= 0 {
		c := r.phases[p]
		f.outageReached = pct(c.allowed, c.offered)
		f.shedAfter = timing(p, func(c counts) bool { return pct(c.dropped, c.offered) >= 90 })
	}
	if p := r.phaseOf(roleHealed); p >= 0 {
		f.admittedAfter = timing(p, func(c counts) bool { return pct(c.allowed, c.offered) >= 95 })
	}
	if p := r.phaseOf(roleOverload); p >= 0 {
		c, ph := r.phases[p], r.scenario.phases[p]
		if servable := min(float64(c.offered), ph.capacity*ph.length.Seconds()); servable > 0 {
			f.goodput = 100 * float64(c.succeeded) / servable
		}
		f.attemptsPerSuccess = math.Inf(1)
		if c.succeeded > 0 {
			f.attemptsPerSuccess = float64(c.allowed) / float64(c.succeeded)
		}
	}
	return f
}
