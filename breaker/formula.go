package breaker

import "math"

// formula is the drop decision: the SRE book's equation 21-1 and the
// refinements that options switch on. It is the one place the decision is
// written; Allow, Stats and events all call it.
type formula struct {
	k          float64 // multiplier on accepts; larger is more tolerant
	protection float64 // failures tolerated beyond k·accepts
	aggression float64 // the drop probability is ratio^(1/aggression)
	// countDrops counts drops as requests, at most k−1 per admitted call
	// in the window.
	countDrops bool
	// trustRecent sets older outcomes aside when the newest buckets agree.
	trustRecent bool
}

// tally is what the formula reads from a breaker's windows.
type tally struct {
	successes, failures int64 // admitted calls in the window, by outcome
	drops               int64 // calls dropped in the window
	// The newest run of finished buckets that agree (only successes, or
	// only failures) and the current bucket, together; see streaks.
	recentSuccesses, recentFailures int64
}

// ratio returns the share of calls to drop before aggression,
//
//	max(0, (total − protection − K·accepts) / (total + 1))
//
// as a fraction num/den, with num 0 when nothing is dropped, so that the
// call path compares without a division (see drops)
// with accepts the successes and total the admitted calls, plus, with
// countDrops, the drops up to (K−1)·admitted. With trustRecent, when the
// newest buckets that agree and the current one hold only failures, more
// than protection of them, older successes are set aside (accepts is 0,
// total the failures); when they hold only successes, more than
// protection, nothing is dropped.
//
// The cap on counted drops keeps the numerator at or below
// K·failures − protection, so drops alone never keep a dependency shed once
// its failures have left the window: without failures the ratio is 0,
// whatever the drops and the newest buckets hold.
func (f *formula) ratio(c tally) (num, den float64) {
	if c.failures == 0 { // the numerator is at most K·failures − protection
		return 0, 1
	}
	return f.ratioOfFailing(c)
}

// ratioOfFailing is ratio for a window with failures; ratio stays small
// enough to be inlined on the call path, where windows without failures
// are the common case.
func (f *formula) ratioOfFailing(c tally) (num, den float64) {
	successes := float64(c.successes)
	admitted := float64(c.successes + c.failures)
	if f.trustRecent {
		switch {
		case c.recentSuccesses == 0 && float64(c.recentFailures) > f.protection: // down
			successes, admitted = 0, float64(c.failures)
		case c.recentFailures == 0 && float64(c.recentSuccesses) > f.protection: // up
			return 0, 1
		}
	}
	total := admitted
	if f.countDrops {
		// min(drops, (K−1)·admitted), written out: neither is NaN, and the
		// built-in min's care for NaN and −0 costs a fifth of a drop.
		counted := (f.k - 1) * admitted
		if drops := float64(c.drops); drops < counted {
			counted = drops
		}
		total += counted
	}
	num = total - f.protection - f.k*successes
	if !(num > 0) {
		return 0, 1
	}
	return num, total + 1
}

// probability returns the probability that a call is dropped, given the
// formula's ratio num/den: (num/den)^(1/aggression).
func (f *formula) probability(num, den float64) float64 {
	if !(num > 0) {
		return 0
	}
	ratio := num / den
	if f.aggression == 1 {
		return ratio
	}
	return math.Pow(ratio, 1/f.aggression)
}

// drops reports whether a call is dropped, given the formula's ratio
// num/den and a draw u uniform in [0, 1): when u < (num/den)^(1/aggression),
// compared as u^aggression·den < num, which needs no division, nor a power
// for the usual aggressions (the default 1.5 as u³·den² < num², both sides
// squared, which needs no square root either).
func (f *formula) drops(num, den, u float64) bool {
	switch f.aggression {
	case 1:
		return u*den < num
	case 1.5: // the default
		return u*u*u*(den*den) < num*num
	case 2:
		return u*u*den < num
	}
	return math.Pow(u, f.aggression)*den < num
}
