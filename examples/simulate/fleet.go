package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
)

// maxClients bounds -clients.
const maxClients = 1000

// fleetConfig is the fleet a simulation runs: clients breakers of one
// dependency, each offering the scenario's rate.
type fleetConfig struct {
	clients   int  // 1 for a single breaker
	share     bool // share counts through the store
	partition bool // the outage phase fails client 1's calls only
}

// validate checks the fleet's flags.
func (fc fleetConfig) validate() error {
	switch {
	case fc.clients < 1 || fc.clients > maxClients:
		return fmt.Errorf("-clients %d: must be between 1 and %d", fc.clients, maxClients)
	case fc.partition && fc.clients < 2:
		return fmt.Errorf("-partition: needs -clients 2 or more, got %d", fc.clients)
	}
	return nil
}

// fleetStore holds what a fleet's breakers share, with the semantics of
// redisbreaker's hash in Redis: per client, the counts it published last
// and when, and their sum. A client's sync replaces its counts and keeps
// the sum up to date; once a quarter of a window at most, it sweeps
// instead: it deletes the counts published more than a window ago (their
// process has stopped, or cannot reach Redis) and adds up the rest afresh.
// It returns the sum less the client's own counts, as redisbreaker's
// script does in the one round trip of a period.
type fleetStore struct {
	window  time.Duration
	counts  []breaker.Counts
	at      []time.Time // when each client published; zero if not, or deleted
	sum     breaker.Counts
	sweptAt time.Time
}

func newFleetStore(clients int, window time.Duration) *fleetStore {
	return &fleetStore{window: window, counts: make([]breaker.Counts, clients), at: make([]time.Time, clients)}
}

// sync publishes client j's counts at t and returns the others', added up.
func (s *fleetStore) sync(j int, t time.Time, own breaker.Counts) breaker.Counts {
	if s.sweptAt.IsZero() || t.Sub(s.sweptAt) >= s.window/4 {
		s.counts[j], s.at[j] = own, t
		s.sum = breaker.Counts{}
		for i, c := range s.counts {
			switch {
			case s.at[i].IsZero():
			case t.Sub(s.at[i]) > s.window:
				s.counts[i], s.at[i] = breaker.Counts{}, time.Time{}
			default:
				s.sum = s.sum.Add(c)
			}
		}
		s.sweptAt = t
	} else {
		if !s.at[j].IsZero() {
			s.sum = s.sum.Add(negate(s.counts[j]))
		}
		s.counts[j], s.at[j] = own, t
		s.sum = s.sum.Add(own)
	}
	return s.sum.Add(negate(own))
}

// negate returns −c.
func negate(c breaker.Counts) breaker.Counts {
	return breaker.Counts{Successes: -c.Successes, Failures: -c.Failures, Drops: -c.Drops,
		RecentSuccesses: -c.RecentSuccesses, RecentFailures: -c.RecentFailures,
		ReachSuccesses: -c.ReachSuccesses, ReachFailures: -c.ReachFailures, ReachDrops: -c.ReachDrops,
		Down: -c.Down, Recovering: -c.Recovering}
}

// fleetResult is what each client of a fleet saw, per phase.
type fleetResult struct {
	clients [][]counts // per client, per phase
}

// simulateFleet runs sc through fc.clients breakers built from bc, each
// offering every phase's rate on its own virtual clock, their calls
// interleaved evenly, against one dependency whose capacity they share.
// Every bucket span (window/buckets, redisbreaker's default period), each
// client syncs with the store, client j at j/clients of the way through the
// span, so that the syncs of the fleet are spread as those of processes
// are; with fc.share it then decides on the others' counts as well as its
// own ([breaker.Fleet]).
func simulateFleet(bc breakerConfig, fc fleetConfig, sc scenario) (*result, *fleetResult, error) {
	if sc.mix.set() {
		return nil, nil, fmt.Errorf("-clients %d: a fleet's calls carry no criticality; leave out -mix and a scenario's mix", fc.clients)
	}
	n := fc.clients
	drivers := make([]*driver, n)
	links := make([]*breaker.Fleet, n)
	for j := range drivers {
		cbc := bc
		cbc.seed = bc.seed + uint64(j)<<32 // client 0 draws as a single breaker does
		d, err := newDriver(cbc, epoch)
		if err != nil {
			return nil, nil, err
		}
		drivers[j] = d
		links[j], _ = breaker.FleetOf(d.b)
	}
	store := newFleetStore(n, bc.window)
	period := bc.window / time.Duration(bc.buckets)
	// The next sync: of client syncClient, in round syncRound.
	syncRound, syncClient := int64(0), 0
	syncAt := func() time.Duration {
		return time.Duration(syncRound)*period + time.Duration(int64(syncClient)*int64(period)/int64(n))
	}
	syncUntil := func(at time.Duration) {
		for ; syncAt() <= at; syncRound, syncClient = syncRound+(int64(syncClient)+1)/int64(n), (syncClient+1)%n {
			t := epoch.Add(syncAt())
			d := drivers[syncClient]
			d.settle(t)
			d.clk.now = t
			others := store.sync(syncClient, t, links[syncClient].Counts())
			if fc.share {
				if err := links[syncClient].SetOthers(others); err != nil {
					panic(err) // sums of a window's counts are always valid
				}
			}
		}
	}

	dependencyRand := rand.New(rand.NewPCG(bc.seed, bc.seed+1))
	res := &result{scenario: sc, phases: make([]counts, len(sc.phases)), slots: make([][]counts, len(sc.phases))}
	fr := &fleetResult{clients: make([][]counts, n)}
	for j := range fr.clients {
		fr.clients[j] = make([]counts, len(sc.phases))
	}
	for s := time.Duration(0); s < sc.length(); s += time.Second {
		res.seconds = append(res.seconds, counts{phase: sc.phases[sc.phaseAt(s)].name})
	}
	var elapsed time.Duration
	for p, ph := range sc.phases {
		res.phases[p].phase = ph.name
		res.slots[p] = make([]counts, (ph.length+slot-1)/slot)
		capacity := newCapacity(ph.capacity)
		for i := range ph.requests() {
			for j, d := range drivers {
				// Client j's calls come j/n of the way between two calls.
				since := ph.arrival(i) + time.Duration(float64(j)*float64(time.Second)/(ph.rate*float64(n)))
				at := elapsed + since
				syncUntil(at)
				slotIndex := int(since / slot)
				errorRate := ph.errors
				if fc.partition && ph.role == roleOutage && j != 0 {
					errorRate = 0 // the partition cuts client 1 off alone
				}
				c := counts{phase: ph.name, offered: 1}
				if promise := d.allow(epoch.Add(at)); promise != nil {
					c.allowed = 1
					ok := capacity.take(since) && !fails(dependencyRand, errorRate)
					if ok {
						c.succeeded = 1
					}
					d.finish(promise, epoch.Add(at), ph.latency, ok)
				} else {
					c.dropped = 1
				}
				res.timeline.add(at, c)
				res.phases[p].add(c)
				res.slots[p][slotIndex].add(c)
				fr.clients[j][p].add(c)
			}
		}
		elapsed += ph.length
	}
	for _, d := range drivers {
		d.drain()
	}
	return res, fr, nil
}

// fleetLine describes the fleet of a simulation, or is empty for one
// breaker.
func fleetLine(fc fleetConfig, bc breakerConfig) string {
	if fc.clients <= 1 {
		return ""
	}
	s := fmt.Sprintf("%d clients, each at the rate below, ", fc.clients)
	if fc.share {
		s += fmt.Sprintf("sharing counts every %v", bc.window/time.Duration(bc.buckets))
	} else {
		s += "each on its own counts (-share=false)"
	}
	if fc.partition {
		s += "; the outage fails client 1's calls only"
	}
	return s
}

// clientSpread returns the lowest and highest share, over the clients, of
// phase p's calls that were admitted.
func (fr *fleetResult) clientSpread(p int) (lo, hi float64) {
	lo, hi = 100, 0
	for _, c := range fr.clients {
		share := pct(c[p].allowed, c[p].offered)
		lo, hi = min(lo, share), max(hi, share)
	}
	return lo, hi
}

// othersDropped returns the calls of phase p that clients other than
// client 1 offered and had dropped.
func (fr *fleetResult) othersDropped(p int) (dropped, offered int) {
	for _, c := range fr.clients[1:] {
		dropped += c[p].dropped
		offered += c[p].offered
	}
	return dropped, offered
}
