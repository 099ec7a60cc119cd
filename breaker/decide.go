package breaker

import (
	"math"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/proba"
)

// admit decides whether to admit a call at level c (an index, lowest level
// first) that counts on counts: the cohort it counts on if admitted, or
// the drop error. While the window holds no failure and no fleet's counts
// (mode 0), nothing can be dropped: that is the common case, a load, a
// pick and the call counted on its cohort. An operator's override, while
// one is set, decides before the window does (override.go).
func (b *googleBreaker) admit(c *counts, level int) (*cohort, error) {
	s := c.pick()
	if m := b.mode.Load(); m != 0 {
		if m&modeOverride != 0 {
			if co, ok, err := b.overridden(s); ok {
				return co, err
			}
		}
		decided := s.decided.Load()
		if n := dropsOf(decided) + 1; due(n) { // decided on the clock's time
			if !b.advanceIfDue() && judgeDue(n) {
				b.judge() // the drops counted since the last judgement
			}
			decided = s.decided.Load() // the bucket may have finished
			m = b.mode.Load()
		}
		if p := math.Float64frombits(b.probs[level].Load()); p > 0 && (m&modeProbe == 0 || !b.takeProbe()) {
			drop, counted := false, false
			if m&modePaced != 0 {
				p = 1 // the paced calls alone are admitted
			}
			if b.proba == nil {
				drop, counted = s.decide(threshold(p), decided)
			}
			if !counted {
				drop = s.redecide(p, b.proba)
			}
			if drop {
				if e := b.events; e != nil && !e.shedding.Load() {
					e.dropped(b) // the first drop: told now
				}
				if err := b.reasons.dropErr.Load(); err != nil { // built already: most drops
					return nil, err
				}
				return nil, b.reasons.err(b.name)
			}
		}
		if b.hang.hanging.Load() { // the call, out, counts against the dependency at once
			co := s.admitted()
			b.judge()
			return co, nil
		}
	}
	// Admitted: counted on the stripe's live cohort, written out here
	// rather than called (stripe.admitted), which is a tenth of the call.
	if co := s.cohort.Load(); co != nil {
		if n := co.started.Load() + 1; !co.admitDue(n) {
			if s.spread {
				co.started.Add(1)
				return co, nil
			}
			if co.started.CompareAndSwap(n-1, n) {
				return co, nil
			}
		}
	}
	return s.admitted(), nil
}

// decide draws whether to drop a call, counts the decision on s, and
// reports whether the call is dropped; decided is what the caller last
// read of s.decided, and the call is dropped when the draw is below cut
// (see threshold). It reports ok false, and counts nothing, when
// another decision changed s.decided first: the caller then calls
// redecide.
//
// The draw is a hash of s.decided, the stripe's count of decisions, and
// of its salt (see draw): the compare-and-swap that counts the decision
// is then the whole cost of the draw, where a draw from math/rand/v2's
// generator cost about a third of a drop. Each decision that counts finds
// decided at a value no other decision of the bucket found, so each draw
// is a hash of its own input. decide is a leaf, small enough to be
// inlined into admit: with redecide's loop and WithProba's draw in the
// same function, a drop cost about a tenth more.
func (s *stripe) decide(cut uint64, decided int64) (drop, ok bool) {
	drop = draw(s.salt.Load(), decided) < cut
	return drop, s.decided.CompareAndSwap(decided, counted(decided, drop))
}

// redecide decides with probability p as decide does, until its
// decision counts, for a decision that lost its compare-and-swap to
// another (which it takes for contention), or with the draw of source,
// a source given by WithProba, when source is not nil.
func (s *stripe) redecide(p float64, source *proba.Proba) bool {
	var drop bool
	if source != nil {
		if drop = source.Float64() < p; !drop {
			return false
		}
	} else if !s.spread {
		s.counts.contended()
	}
	salt, cut := s.salt.Load(), threshold(p)
	for {
		old := s.decided.Load()
		if source == nil {
			drop = draw(salt, old) < cut
		}
		if s.decided.CompareAndSwap(old, counted(old, drop)) {
			return drop
		}
		if !s.spread {
			s.counts.contended()
		}
	}
}

// counted returns a stripe's decided word with one more decision: a drop
// counts in the low half, up to dropMask (4,294,967,295 drops of one
// stripe in one bucket), past which it counts as an admitted call, so
// that the word still changes.
func counted(decided int64, drop bool) int64 {
	if drop && dropsOf(decided) < dropMask {
		return decided + 1
	}
	return decided + admittedOne
}

// draw returns a number in [0, 2⁵³) that is a hash of salt and n, the
// draw of a stripe's n-th decision: n steps of a Weyl sequence from salt
// (the step is 2⁶⁴ divided by the golden ratio), then one xor-shift and
// multiply, of which it keeps the high 53 bits. A call is dropped when
// the draw is below threshold(p): probability p to within 2⁻⁵³.
// SplitMix64's full output function, one more shift and multiply, cost 7 %
// of a drop and made the draws no more uniform in the tests.
func draw(salt uint64, n int64) uint64 {
	z := salt + uint64(n)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 32)) * 0xd6e8feb86659fd93
	return z >> 11
}

// threshold is the draw below which a call is dropped with probability p.
func threshold(p float64) uint64 { return uint64(p * 0x1p53) }

// judge works out the drop probability of every level from the judgement
// of the finished buckets and the live bucket, stores it for the calls,
// and returns the breaker's overall probability. Goroutines that judge at
// once may store in any order: each stores a judgement of the live bucket
// as it found it.
func (b *googleBreaker) judge() float64 {
	j := b.judged.Load()
	lv := b.levels.Load()
	if lv == nil || j.levels == nil {
		p := b.probability(&j.sum, b.counts.sum())
		b.probs[criticality.Default.Index()].Store(math.Float64bits(p))
		b.markShedding(p > 0)
		return p
	}
	var lives [criticality.Levels]evidence.Bucket
	var all evidence.Bucket
	for i, x := range lv {
		lives[i] = x.counts.sum()
		all = all.Plus(lives[i])
	}
	p := b.probability(&j.sum, all)
	probs := b.levelDropProbabilities(p, j, &lives)
	shedding := false
	for i := range probs {
		b.probs[i].Store(math.Float64bits(probs[i]))
		shedding = shedding || probs[i] > 0
	}
	b.markShedding(shedding)
	return p
}

// markShedding sets or clears modeShedding, writing only on a change.
func (b *googleBreaker) markShedding(shedding bool) {
	if on := b.mode.Load()&modeShedding != 0; on != shedding {
		if shedding {
			b.setMode(modeShedding)
		} else {
			b.clearMode(modeShedding)
		}
	}
}

// probability is the drop probability over sum and the live bucket, and
// over the fleet's counts too while the breaker holds them: the higher.
func (b *googleBreaker) probability(sum *evidence.Summary, live evidence.Bucket) float64 {
	settings := b.judging()
	num, den := settings.Ratio(sum, live)
	if b.mode.Load()&modeFleet != 0 {
		num, den = b.withFleet(settings, sum, live, num, den) // fleet.go
	}
	return settings.Probability(num, den)
}

func (b *googleBreaker) Allow() (srebreaker.Promise, error) {
	c, err := b.admit(&b.counts, criticality.Default.Index())
	if err != nil {
		return nil, err
	}
	return promise{c}, nil
}
