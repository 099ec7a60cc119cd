package evidence

// Shared is a history as a fleet shares it: finished buckets numbered on a
// grid that every process of the fleet agrees on (bucket g spans
// [g·span, (g+1)·span) from the Unix epoch), so that histories of several
// processes add up bucket by bucket. It holds the window's finished
// buckets one by one and the older blocks that reading back on light
// traffic reads, each block a window's worth of buckets (block k holds
// buckets k·Size to k·Size+Size−1).
//
// It holds counts, never anything the formula made of them: the formula
// can change without changing what a fleet shares.
type Shared struct {
	// Span is a bucket's span, in ns; Size how many buckets a window
	// holds, the live one included.
	Span, Size int64
	// Newest is the number of the newest finished bucket; Buckets holds
	// the finished buckets up to it, oldest first (the last is Newest).
	Newest  int64
	Buckets []Bucket
	// NewestBlock is the number of the newest block; Blocks holds the
	// blocks up to it, oldest first (the last is NewestBlock).
	NewestBlock int64
	Blocks      []Bucket
}

// Share returns h as a fleet shares it: its bucket n is bucket n+offset of
// the fleet's grid, and its block n block n+round(offset/size), the
// nearest block of the grid. The newest block may still be filling up:
// it holds the buckets that have left the window. Empty blocks at either
// end, and empty buckets older than the oldest that is not, are left out:
// they add nothing.
func (h *History) Share(span, offset int64) Shared {
	s := Shared{Span: span, Size: h.size, Newest: h.next - 1 + offset}
	if h.ring == nil || h.next == 0 {
		return s
	}
	n := min(int64(len(h.ring)), h.next)
	s.Buckets = make([]Bucket, n)
	h.Buckets(func(num int64, b Bucket) bool {
		s.Buckets[n-1-(h.next-1-num)] = b
		return true
	})
	var blocks []Bucket
	newest := int64(0)
	h.Blocks(func(num int64, b Bucket) bool {
		if blocks == nil {
			newest = num
		}
		blocks = append(blocks, b)
		return true
	})
	// blocks is newest first: leave out the empty blocks at either end,
	// which add nothing, then turn it oldest first.
	for len(blocks) > 0 && blocks[0] == (Bucket{}) {
		blocks = blocks[1:]
		newest--
	}
	for len(blocks) > 0 && blocks[len(blocks)-1] == (Bucket{}) {
		blocks = blocks[:len(blocks)-1]
	}
	for i, j := 0, len(blocks)-1; i < j; i, j = i+1, j-1 {
		blocks[i], blocks[j] = blocks[j], blocks[i]
	}
	if len(blocks) > 0 {
		s.Blocks = blocks
		s.NewestBlock = newest + blockShift(offset, h.size)
	}
	// Likewise the empty buckets before the oldest that held anything.
	for len(s.Buckets) > 0 && s.Buckets[0] == (Bucket{}) {
		s.Buckets = s.Buckets[1:]
	}
	if len(s.Buckets) == 0 {
		s.Buckets = nil
	}
	return s
}

// blockShift is how many blocks of size buckets a shift of offset buckets
// comes to, rounded to the nearest.
func blockShift(offset, size int64) int64 {
	return floorDivide(offset+size/2, size)
}

// floorDivide is a/n rounded down.
func floorDivide(a, n int64) int64 {
	q := a / n
	if a%n != 0 && (a < 0) != (n < 0) {
		q--
	}
	return q
}

// Merged returns the summary of h with the buckets of others added to
// its own, bucket by bucket: others' bucket g to h's bucket g−offset, their
// block k to h's block k−round(offset/size), as [History.Share] numbers
// them. Others' buckets past h's newest finished bucket are left out
// (they count once h has finished theirs), and so are those before the
// blocks reach. The runs of agreeing buckets are followed afresh over the
// merged buckets, oldest first: over the blocks, each taken as one bucket
// spanning the buckets it holds, then over the window's buckets one by
// one. A merged history that is off by a bucket (others published a
// moment before h finished its newest) is made afresh, right, once others
// publish again.
//
// others must have h's span and size; the caller checks.
func (h *History) Merged(others *Shared, offset int64) Summary {
	if len(others.Buckets) == 0 && len(others.Blocks) == 0 {
		return h.Summarize() // exactly h's, runs and all
	}
	m := History{size: h.size, horizon: h.horizon, evidence: h.evidence, k: h.k, protection: h.protection, next: h.next}
	m.ring = make([]cell, h.size-1)
	if h.ring != nil {
		copy(m.ring, h.ring)
	}
	if k := h.blockCount(); k > 0 {
		m.blocks = make([]cell, k)
		if h.blocks != nil {
			copy(m.blocks, h.blocks)
			m.newestBlock = h.newestBlock
		} else {
			m.newestBlock = max(h.next-int64(len(m.ring))-1, 0) / h.size
		}
	}
	// The oldest bucket in the ring; older ones are in blocks.
	oldest := max(h.next-int64(len(m.ring)), 0)
	first := others.Newest - int64(len(others.Buckets)) + 1
	for i, b := range others.Buckets {
		n := first + int64(i) - offset
		switch {
		case n >= h.next || n < 0:
		case n >= oldest && len(m.ring) > 0:
			m.ring[n%int64(len(m.ring))].add(b)
		default:
			m.addToBlock(n/h.size, b)
		}
	}
	shift := blockShift(offset, h.size)
	firstBlock := others.NewestBlock - int64(len(others.Blocks)) + 1
	for i, b := range others.Blocks {
		m.addToBlock(firstBlock+int64(i)-shift, b)
	}
	for i := oldest; i < h.next && len(m.ring) > 0; i++ {
		m.window = m.window.Plus(m.ring[i%int64(len(m.ring))].bucket())
	}
	if h.next > 0 && len(m.ring) > 0 {
		m.newest = m.ring[(h.next-1)%int64(len(m.ring))].bucket()
	}
	// The runs, afresh: blocks oldest first, each spanning the buckets
	// that have left the ring, then the ring's buckets.
	if m.blocks != nil {
		lo := max(0, (h.next-h.horizon)/h.size, m.newestBlock-int64(len(m.blocks))+1)
		for num := lo; num <= m.newestBlock; num++ {
			span := min((num+1)*h.size, oldest) - num*h.size
			if span > 0 {
				b := m.blocks[num%int64(len(m.blocks))].bucket()
				m.run.finishSpan(b, span, h.size, m.calm(b))
			}
		}
	}
	for i := oldest; i < h.next && len(m.ring) > 0; i++ {
		b := m.ring[i%int64(len(m.ring))].bucket()
		m.run.finish(b, h.size, m.calm(b))
	}
	return m.Summarize()
}

// addToBlock adds b to block num, when the blocks reach it.
func (h *History) addToBlock(num int64, b Bucket) {
	if h.blocks == nil || num < 0 || num > h.newestBlock || h.newestBlock-num >= int64(len(h.blocks)) {
		return
	}
	h.blocks[num%int64(len(h.blocks))].add(b)
}

// finishSpan takes in b as n buckets that held its calls between them, of
// a window of size buckets: a down run spans them all. calm is as for
// finish, over b's calls.
func (r *run) finishSpan(b Bucket, n, size int64, calm bool) {
	switch {
	case n <= 1:
		r.finish(b, size, calm)
	case b.Admitted() == 0 && b.Drops == 0:
		r.pass(n, size)
	case b.Admitted() == 0:
		r.quiet += n
		r.idle = 0
	case b.Successes == 0:
		r.finish(b, size, calm)
		r.downBuckets += n - 1
	default:
		r.finish(b, size, calm)
	}
}

// FleetRatio is [Settings.Ratio] over a fleet's history, for one of its
// processes: sum is the judgement of the fleet's finished buckets (the
// process's own and the others', added up: [History.Merged]) and live the
// fleet's live bucket; own and ownLive are the process's own, which the
// fleet's include. It judges as Ratio does, every rule included, and by
// three more, each with TrustRecent and Evidence:
//
//   - fleetProbe: after the fleet has been down for a window, while its
//     window holds drops alone, the process lets through its share of the
//     fleet's calls once no failure is left in the window, not its next
//     call: each process learns of the others' probes only once they
//     publish them, and a fleet of n would otherwise send n calls at once,
//     every window, to a dependency still down.
//   - ownsWindow: when the fleet's newest buckets agree on neither outcome
//     and no recovery is judged, a process whose own judgement reads
//     Evidence calls leaves the formula over the fleet's window out: under
//     overload it throttles on its own calls, which holds the fleet's calls
//     closer to what the dependency serves (10 processes of 20 calls a
//     second against half the capacity: 1.08 attempts per success, 1.23
//     with the fleet's window judged for each).
//   - ownsUp: such a process whose own newest run holds only successes,
//     more than protection, leaves the fleet's newest buckets out as well:
//     of 50 processes of 20 calls a second, 20 cut off from the dependency,
//     the 30 others dropped 1.1–1.4 % of their calls without it, 0–0.02 %
//     with it.
//
// The higher of Ratio over the process's own history and FleetRatio is
// the process's ratio.
func (s *Settings) FleetRatio(sum *Summary, live Bucket, own *Summary, ownLive Bucket) (num, den float64) {
	if num, den, ok := s.fleetProbe(sum, live, own, ownLive); ok {
		return num, den
	}
	mine := ownNone
	if s.ownsWindow(own, ownLive) {
		mine = ownWindow
	}
	if s.ownsUp(own, ownLive) {
		mine = ownUp
	}
	recentSuccesses, recentFailures := sum.run.recent(live)
	return s.ratio(sum, live, recentSuccesses, recentFailures, mine)
}

// fleetProbe (RuleFleetProbe) returns the ratio of a process of a fleet
// that has been down for a window, while the fleet's window holds drops
// alone: the others' share of the fleet's drops, so that the process lets
// through its share of the fleet's calls once no failure is left in the
// window, not its next call. ok is false when the rule does not apply.
func (s *Settings) fleetProbe(sum *Summary, live Bucket, own *Summary, ownLive Bucket) (num, den float64, ok bool) {
	window := sum.Window.Plus(live)
	if !s.TrustRecent || s.Evidence == 0 || !s.on(RuleFleetProbe) || window.Admitted() != 0 ||
		sum.run.downBuckets < int64(s.Buckets) {
		return 0, 0, false
	}
	others := window.Drops - own.Window.Plus(ownLive).Drops
	if others <= 0 {
		return 0, 1, true
	}
	return float64(others), float64(window.Drops + 1), true
}

// ownsEvidence reports whether a process's own judgement reads Evidence
// admitted calls, in its window or read back for.
func (s *Settings) ownsEvidence(own *Summary, ownLive Bucket) bool {
	read := max(own.Window.Plus(ownLive).Admitted(), own.Reach.Plus(ownLive).Admitted())
	return s.TrustRecent && s.Evidence > 0 && read >= s.Evidence
}

// ownsWindow (RuleFleetOwn) reports whether a process of a fleet with
// Evidence calls of its own judges the fleet's window on them: it leaves
// the formula over the fleet's window out, throttling on its own calls as
// it would alone.
func (s *Settings) ownsWindow(own *Summary, ownLive Bucket) bool {
	return s.on(RuleFleetOwn) && s.ownsEvidence(own, ownLive)
}

// ownsUp (RuleFleetOwnUp) reports whether a process of a fleet with
// Evidence calls of its own, whose own newest run and live bucket hold
// only successes, more than protection of them, leaves the fleet's newest
// buckets out as well: the dependency serves it, whatever it does to the
// others.
func (s *Settings) ownsUp(own *Summary, ownLive Bucket) bool {
	if !s.on(RuleFleetOwnUp) || !s.ownsEvidence(own, ownLive) {
		return false
	}
	successes, failures := own.run.recent(ownLive)
	return failures == 0 && float64(successes) > s.Protection
}

// ownJudgement is what a process of a fleet has of its own that the fleet's
// judgement defers to, while the fleet's newest buckets agree on neither
// outcome and no recovery is judged ([Settings.FleetRatio]).
type ownJudgement int

const (
	// ownNone: too few calls of its own; the fleet's history judges.
	ownNone ownJudgement = iota
	// ownWindow: Evidence admitted calls; the process judges the fleet's
	// window on its own, but the fleet's newest buckets still shift.
	ownWindow
	// ownUp: Evidence admitted calls, and its newest run holds only
	// successes, more than protection of them: its calls succeed, and
	// nothing of the fleet's sheds them.
	ownUp
)
