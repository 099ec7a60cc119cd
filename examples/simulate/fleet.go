package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/srebreaker/srebreaker/fleet"
)

// maxClients bounds -clients.
const maxClients = 1000

// fleetConfig is the fleet a simulation runs: clients breakers of one
// dependency, each offering the scenario's rate.
type fleetConfig struct {
	clients int  // 1 for a single breaker
	share   bool // share counts through the store
	// cutoff is how many clients the outage cuts off: its phases fail the
	// calls of clients 1 to cutoff only, and the others' succeed. 0 fails
	// every client's; -partition is 1.
	cutoff int
}

// validate checks the fleet's flags.
func (fc fleetConfig) validate() error {
	switch {
	case fc.clients < 1 || fc.clients > maxClients:
		return fmt.Errorf("-clients %d: must be between 1 and %d", fc.clients, maxClients)
	case fc.cutoff != 0 && fc.clients < 2:
		return fmt.Errorf("-cutoff %d: needs -clients 2 or more, got %d", fc.cutoff, fc.clients)
	case fc.cutoff < 0 || fc.cutoff >= fc.clients:
		return fmt.Errorf("-cutoff %d: must be between 1 and %d, one fewer than -clients", fc.cutoff, fc.clients-1)
	}
	return nil
}

// cutSettle is how long after an outage phase begins the cut-off clients'
// calls are judged on their own in the report: from then to the phase's
// end, each should have dropped at least 90 % of its calls.
const cutSettle = 2 * time.Second

// fleetStore holds what a fleet's breakers share, as redisbreaker's
// counters on the grid do: the sum, bucket by bucket, of what each client
// published as of its last sync, and the others' part of it returned to a
// client that syncs, as redisbreaker's round trip of a period returns it.
// The store keeps the sum bucket by bucket, so that a sync costs the same
// whatever the number of clients. (Redis keeps a stopped process's counts,
// which age out with the grid; the store drops a history not renewed
// within a window, which comes to the same for clients that never stop.)
type fleetStore struct {
	window    time.Duration
	histories []fleet.History
	at        []time.Time // when each client published; zero if not, or deleted
	buckets   map[int64]fleet.Bucket
	blocks    map[int64]fleet.Bucket
}

func newFleetStore(clients int, window time.Duration) *fleetStore {
	return &fleetStore{window: window, histories: make([]fleet.History, clients), at: make([]time.Time, clients),
		buckets: make(map[int64]fleet.Bucket), blocks: make(map[int64]fleet.Bucket)}
}

// sync publishes client j's history at t and returns the others', merged.
func (s *fleetStore) sync(j int, t time.Time, own fleet.History) fleet.History {
	for i, at := range s.at {
		if !at.IsZero() && (i == j || t.Sub(at) > s.window) {
			s.add(s.histories[i], -1)
			s.histories[i], s.at[i] = fleet.History{}, time.Time{}
		}
	}
	s.histories[j], s.at[j] = own, t
	s.add(own, 1)

	// The others' buckets reach from the oldest to the newest of theirs.
	var others fleet.History
	first, newest, firstBlock, newestBlock := int64(0), int64(0), int64(0), int64(0)
	blocks := false
	for i, h := range s.histories {
		if i == j || s.at[i].IsZero() || len(h.Buckets)+len(h.Blocks) == 0 {
			continue
		}
		if others.Span == 0 {
			others.Span, others.Size = h.Span, h.Size
			first, newest = h.Newest, h.Newest
		}
		first, newest = min(first, h.Newest-int64(len(h.Buckets))+1), max(newest, h.Newest)
		if len(h.Blocks) > 0 {
			lo := h.NewestBlock - int64(len(h.Blocks)) + 1
			if !blocks {
				firstBlock, newestBlock, blocks = lo, h.NewestBlock, true
			}
			firstBlock, newestBlock = min(firstBlock, lo), max(newestBlock, h.NewestBlock)
		}
	}
	if others.Span == 0 {
		return fleet.History{}
	}
	others.Newest = newest
	others.Buckets = make([]fleet.Bucket, newest-first+1)
	for g := first; g <= newest; g++ {
		others.Buckets[g-first] = s.buckets[g]
	}
	subtract(others.Buckets, first, own.Buckets, own.Newest-int64(len(own.Buckets))+1)
	if blocks {
		others.NewestBlock = newestBlock
		others.Blocks = make([]fleet.Bucket, newestBlock-firstBlock+1)
		for k := firstBlock; k <= newestBlock; k++ {
			others.Blocks[k-firstBlock] = s.blocks[k]
		}
		subtract(others.Blocks, firstBlock, own.Blocks, own.NewestBlock-int64(len(own.Blocks))+1)
	}
	return others
}

// add adds h's buckets and blocks to the store's sums, times sign.
func (s *fleetStore) add(h fleet.History, sign int64) {
	for _, part := range []struct {
		sum     map[int64]fleet.Bucket
		first   int64
		buckets []fleet.Bucket
	}{
		{s.buckets, h.Newest - int64(len(h.Buckets)) + 1, h.Buckets},
		{s.blocks, h.NewestBlock - int64(len(h.Blocks)) + 1, h.Blocks},
	} {
		for i, b := range part.buckets {
			g := part.first + int64(i)
			x := part.sum[g]
			x = fleet.Bucket{Successes: x.Successes + sign*b.Successes, Failures: x.Failures + sign*b.Failures,
				Drops: x.Drops + sign*b.Drops}
			if x == (fleet.Bucket{}) {
				delete(part.sum, g)
			} else {
				part.sum[g] = x
			}
		}
	}
}

// subtract takes from sums, whose first number is first, the buckets of
// own, whose first number is ownFirst, where they overlap.
func subtract(sums []fleet.Bucket, first int64, own []fleet.Bucket, ownFirst int64) {
	for i, b := range own {
		if k := ownFirst + int64(i) - first; k >= 0 && k < int64(len(sums)) {
			x := sums[k]
			sums[k] = fleet.Bucket{Successes: x.Successes - b.Successes, Failures: x.Failures - b.Failures,
				Drops: x.Drops - b.Drops}
		}
	}
}

// fleetResult is what each client of a fleet saw, per phase.
type fleetResult struct {
	clients [][]counts // per client, per phase
	// With a cutoff: per phase, the cut-off clients' calls per slot, added
	// up (outage phases only; nil for the others); and per client, its
	// calls of the outage phases from cutSettle after each began.
	cutSlots [][]counts
	settled  []counts
}

// simulateFleet runs sc through fc.clients breakers built from bc, each
// offering every phase's rate on its own virtual clock, their calls
// interleaved evenly, against one dependency whose capacity they share.
// Every bucket span (window/buckets, redisbreaker's default period), each
// client syncs with the store, client j at j/clients of the way through the
// span, so that the syncs of the fleet are spread as those of processes
// are; with fc.share it then decides on the others' counts as well as its
// own ([fleet.Member]).
func simulateFleet(bc breakerConfig, fc fleetConfig, sc scenario) (*result, *fleetResult, error) {
	if sc.mix.set() {
		return nil, nil, fmt.Errorf("-clients %d: a fleet's calls carry no criticality; leave out -mix and a scenario's mix", fc.clients)
	}
	n := fc.clients
	drivers := make([]*driver, n)
	links := make([]*fleet.Member, n)
	for j := range drivers {
		cbc := bc
		cbc.seed = bc.seed + uint64(j)<<32 // client 0 draws as a single breaker does
		d, err := newDriver(cbc, epoch)
		if err != nil {
			return nil, nil, err
		}
		if j > 0 {
			d.gauge = drivers[0].gauge // one count of the fleet's calls in flight
		}
		drivers[j] = d
		links[j], _ = fleet.Of(d.b)
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
			others := store.sync(syncClient, t, links[syncClient].History())
			if fc.share {
				if err := links[syncClient].SetOthers(others); err != nil {
					panic(err) // sums of the fleet's histories are always valid
				}
			}
		}
	}

	dependencyRand := rand.New(rand.NewPCG(bc.seed, bc.seed+1))
	latencyRand := rand.New(rand.NewPCG(bc.seed, bc.seed+4)) // as a single breaker's
	res := &result{scenario: sc, phases: make([]counts, len(sc.phases)), slots: make([][]counts, len(sc.phases))}
	fr := &fleetResult{clients: make([][]counts, n), cutSlots: make([][]counts, len(sc.phases)),
		settled: make([]counts, n)}
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
		cut := fc.cutoff > 0 && ph.role == roleOutage
		if cut {
			fr.cutSlots[p] = make([]counts, len(res.slots[p]))
		}
		for i := range ph.requests() {
			for j, d := range drivers {
				// Client j's calls come j/n of the way between two calls.
				since := ph.arrival(i) + time.Duration(float64(j)*float64(time.Second)/(ph.rate*float64(n)))
				at := elapsed + since
				syncUntil(at)
				slotIndex := int(since / slot)
				errorRate := ph.errors
				if cut && j >= fc.cutoff {
					errorRate = 0 // the outage cuts clients 1 to cutoff off alone
				}
				c := counts{phase: ph.name, offered: 1}
				if promise := d.allow(epoch.Add(at)); promise != nil {
					c.allowed = 1
					served := capacity.take(since)
					ok := served && !fails(dependencyRand, errorRate)
					latency, timedOut := ph.answer(sc.timeout, latencyRand)
					c.finish(d, promise, epoch.Add(at), latency, ok, ph.saysOverloaded && !served, timedOut)
				} else {
					c.dropped = 1
				}
				res.timeline.add(at, c)
				res.phases[p].add(c)
				res.slots[p][slotIndex].add(c)
				fr.clients[j][p].add(c)
				if cut && j < fc.cutoff {
					fr.cutSlots[p][slotIndex].add(c)
				}
				if cut && since >= cutSettle {
					fr.settled[j].add(c)
				}
			}
		}
		elapsed += ph.length
	}
	for _, d := range drivers {
		d.drain()
	}
	g := drivers[0].gauge
	res.peakInFlight, res.peakAt = g.peak, g.peakAt.Sub(epoch)
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
		s += fmt.Sprintf("sharing histories every %v", bc.window/time.Duration(bc.buckets))
	} else {
		s += "each on its own history (-share=false)"
	}
	switch {
	case fc.cutoff == 1:
		s += "; the outage fails client 1's calls only"
	case fc.cutoff > 1:
		s += fmt.Sprintf("; the outage fails the calls of clients 1 to %d only", fc.cutoff)
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

// group returns the calls of phase p of clients from to to−1, added up.
func (fr *fleetResult) group(p, from, to int) counts {
	var sum counts
	for _, c := range fr.clients[from:to] {
		sum.add(c[p])
	}
	return sum
}

// cutShedAfter returns the time from the start of outage phase p until
// the cut-off clients' calls, added up, were 90 % dropped, sustained (as
// [result.sustainedFrom] times it), and whether they were.
func (fr *fleetResult) cutShedAfter(p int) (time.Duration, bool) {
	r := result{slots: fr.cutSlots}
	return r.sustainedFrom(p, func(c counts) bool { return pct(c.dropped, c.offered) >= 90 })
}

// leastSettledDrop returns the lowest share, over clients from to to−1, of
// their calls from cutSettle into the outage phases on that were dropped.
func (fr *fleetResult) leastSettledDrop(from, to int) float64 {
	least := 100.0
	for _, c := range fr.settled[from:to] {
		least = min(least, pct(c.dropped, c.offered))
	}
	return least
}
