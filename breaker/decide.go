package breaker

import (
	"math"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/proba"
)

// admit decides whether to admit a call at level c (an index, lowest level
// first) that counts on counts: the stripe it counts on if admitted, or
// the drop error. While the window holds no failure and no fleet's counts
// (mode 0), nothing can be dropped: that is the common case, a load and a
// pick.
func (b *googleBreaker) admit(c *counts, level int) (*stripe, error) {
	s := c.pick()
	if b.mode.Load() == 0 {
		return s, nil
	}
	decided := s.decided.Load()
	if n := dropsOf(decided) + 1; due(n) { // decided on the clock's time
		if !b.advanceIfDue() && judgeDue(n) {
			b.judge() // the drops counted since the last judgement
		}
		decided = s.decided.Load() // the bucket may have finished
	}
	p := math.Float64frombits(b.probs[level].Load())
	if !(p > 0) {
		return s, nil
	}
	if !s.decide(p, b.proba, decided) {
		return s, nil
	}
	if err := b.reasons.dropErr.Load(); err != nil { // built already: most drops
		return nil, err
	}
	return nil, b.reasons.err(b.name)
}

// decide draws whether to drop a call with probability p, counts the
// decision on s, and reports whether the call is dropped; decided is what
// the caller last read of s.decided.
//
// With a source given by WithProba, the draw is that source's next number.
// Otherwise it is a hash of s.decided, the stripe's count of decisions,
// and its salt: the compare-and-swap that counts the decision is then the
// whole cost of the draw, where a draw from math/rand/v2's generator cost
// about a third of a drop. Each decision that counts finds
// decided at a value no other decision of the bucket found, so each draw
// is a hash of its own input; a decision whose compare-and-swap fails
// draws again on the value it finds.
func (s *stripe) decide(p float64, source *proba.Proba, decided int64) bool {
	var drop bool
	if source != nil {
		if drop = source.Float64() < p; !drop {
			return false
		}
	}
	salt := s.salt.Load()
	for old := decided; ; old = s.decided.Load() {
		if source == nil {
			drop = uniform(salt, old) < p
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

// uniform returns a number uniform in [0, 1) that is a hash of salt and
// n: SplitMix64's output function on the n-th step from salt.
func uniform(salt uint64, n int64) float64 {
	z := salt + uint64(n)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) * 0x1p-53
}

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
	num, den := b.settings.Ratio(sum, live)
	if b.mode.Load()&modeFleet != 0 {
		num, den = b.withFleet(sum, live, num, den) // fleet.go
	}
	return b.settings.Probability(num, den)
}

// promise is pointer-shaped, so returning it as a srebreaker.Promise does
// not allocate. It records on the stripe the call was admitted on.
type promise struct{ s *stripe }

func (p promise) Accept()              { p.s.markSuccess() }
func (p promise) Reject(reason string) { p.s.markFailure(reason) }

// Ignore records nothing: the call says nothing about the dependency's
// health (see [srebreaker.Ignorer]), so it leaves the window as if the call
// had never been admitted.
func (p promise) Ignore() {}

var _ srebreaker.Ignorer = promise{}

func (b *googleBreaker) Allow() (srebreaker.Promise, error) {
	s, err := b.admit(&b.counts, criticality.Default.Index())
	if err != nil {
		return nil, err
	}
	return promise{s}, nil
}
