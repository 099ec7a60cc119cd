// Package evidence is the breaker's decision as data in, number out: a
// history of buckets (successes, failures and drops per bucket) goes in, the
// drop probability comes out. It reads no clock, takes no lock and touches
// no atomic, so that a table of histories written out by hand tests every
// rule the breaker, a criticality level and a fleet decide by.
//
// The breaker keeps a [History] of its finished buckets and, after each
// bucket finishes, its [Summary]: the judgement of the finished buckets,
// made once per bucket. A call combines the summary with the live bucket
// ([Settings.Ratio]), which costs the same whatever the window's size.
// [Judge] is the two steps in one, for tests and for histories that come
// from elsewhere.
package evidence

import "math"

// Bucket is what one bucket of time held: the admitted calls that finished,
// by outcome, and the calls that were dropped.
type Bucket struct {
	Successes, Failures, Drops int64
}

// Admitted returns the admitted calls that finished in b.
func (b Bucket) Admitted() int64 { return b.Successes + b.Failures }

// Plus returns the field-by-field sum of b and o.
func (b Bucket) Plus(o Bucket) Bucket {
	return Bucket{b.Successes + o.Successes, b.Failures + o.Failures, b.Drops + o.Drops}
}

// Settings are the formula and the refinements it is judged by.
type Settings struct {
	// K is the multiplier on accepts; larger is more tolerant.
	K float64
	// Protection is how many failures are tolerated beyond K·accepts.
	Protection float64
	// Aggression is the exponent: the drop probability is
	// ratio^(1/Aggression); 1 leaves the formula as it is.
	Aggression float64
	// CountDrops counts drops as requests, at most K−1 per admitted call.
	CountDrops bool
	// Overloaded, with CountDrops, counts every drop as a request, as the
	// SRE book does, but in a run picked out of the history (a dependency
	// down, a recovery): the breaker sets it while the dependency has
	// answered a call within the window with an overload rejection (a
	// server that has no room says so), so that about K calls reach it per
	// success however many are offered (countedDrops; a little under K
	// with the breaker's aggression then, tuning.OverloadAggression).
	Overloaded bool
	// TrustRecent judges on the newest run of agreeing buckets when there
	// is one (see [Settings.Ratio]).
	TrustRecent bool
	// Evidence is how many admitted calls the formula wants to judge on:
	// on light traffic it reads back past the window for them. 0 turns off
	// reading back and the rules of light and heavy traffic that use it.
	Evidence int64
	// Buckets is how many buckets the window holds, the live one included.
	Buckets int
	// Horizon is how many windows back the evidence may reach, beyond the
	// window itself.
	Horizon int

	off Rules // rules turned off ([Settings.Without]); none in the breaker
}

// Plain returns the card's formula: max(0, (total − protection −
// K·accepts) / (total + 1)) over a flat window of buckets, nothing else.
func Plain(k, protection float64, buckets int) Settings {
	return Settings{K: k, Protection: protection, Aggression: 1, Buckets: buckets}
}

// Judge returns the drop probability that s gives a history: finished
// buckets, oldest first, each one bucket after the one before it, and the
// live bucket after the last of them.
func Judge(s Settings, finished []Bucket, live Bucket) float64 {
	h := NewHistory(s)
	for _, b := range finished {
		h.Finish(b, 0)
	}
	sum := h.Summarize()
	return s.Probability(s.Ratio(&sum, live))
}

// Probability returns the drop probability given the formula's ratio
// num/den: (num/den)^(1/Aggression), 0 when num is not positive.
func (s *Settings) Probability(num, den float64) float64 {
	if !(num > 0) {
		return 0
	}
	ratio := num / den
	if s.Aggression == 1 || s.Aggression == 0 {
		return ratio
	}
	return math.Pow(ratio, 1/s.Aggression)
}
