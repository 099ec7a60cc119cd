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
	// evidence is how many admitted calls the formula wants to judge on
	// (WithEvidence): when the window holds fewer, it reads the calls
	// reached back for. 0 for the window alone, and for none of the
	// refinements of light traffic below.
	evidence int64
	buckets  int64 // in the window
}

// tally is what the formula reads from a breaker's windows. The call path
// hands it on by pointer: copied by value from reader to decision to
// formula, its 13 words cost a sixth of a decided call (docs/benchmarks.md).
type tally struct {
	successes, failures int64 // admitted calls in the window, by outcome
	drops               int64 // calls dropped in the window
	// The newest run of finished buckets that agree (only successes, or
	// only failures) and the current bucket, together; see streaks.
	recentSuccesses, recentFailures int64
	// downBuckets is how many buckets the newest run of failing buckets
	// spans; recovering is set while the newest run of succeeding buckets
	// follows a run of failing ones that spanned a window or more.
	downBuckets int64
	recovering  bool
	// The newest finished bucket and the current one, together.
	newestSuccesses, newestFailures, newestDrops int64
	// The newest calls, from the current bucket back past the window
	// until they hold evidence admitted calls or reach the horizon: read
	// only when the window holds fewer (see readReach), 0 otherwise.
	reachSuccesses, reachFailures, reachDrops int64
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
// protection, nothing is dropped. When they agree on neither, and the
// newest finished bucket and the current one hold evidence calls or more
// and fail clearly more often than the window (see shifted), the formula
// over those two buckets alone, drops counted alike, is taken if it drops
// more: an overload that begins is judged on its own calls, not on the
// window's older successes.
//
// With evidence, on light traffic (a window holding fewer admitted calls
// than evidence):
//   - the counts are those reached back for, past the window (the drops
//     too, when they are more than the window's);
//   - a dependency found down is judged on the window's failures, or on
//     up to evidence/2 of those reached back for, whichever are more; and
//     once its failing buckets have spanned a whole window, protection no
//     longer applies: it has kept a few failures from shedding, and these
//     are not a few;
//   - after such a run, the first bucket of only successes, with the live
//     one, is enough to readmit: nothing is dropped.
//
// The cap on counted drops keeps the numerator at or below
// K·failures − protection, so drops alone never keep a dependency shed once
// its failures have left the window: without failures in the window the
// ratio is 0, whatever the drops, the newest buckets and the calls reached
// back for hold. On light traffic this is the breaker's probe: a
// dependency shed on older evidence gets a call through once a window has
// passed without an admitted failure.
func (f *formula) ratio(c *tally) (num, den float64) {
	if c.failures == 0 { // the numerator is at most K·failures − protection
		return 0, 1
	}
	return f.ratioOfFailing(c)
}

// ratioOfFailing is ratio for a window with failures; ratio stays small
// enough to be inlined on the call path, where windows without failures
// are the common case.
func (f *formula) ratioOfFailing(c *tally) (num, den float64) {
	succ, fail, drops := c.successes, c.failures, c.drops
	if succ+fail < f.evidence && c.reachSuccesses+c.reachFailures > succ+fail {
		succ, fail, drops = c.reachSuccesses, c.reachFailures, max(drops, c.reachDrops)
	}
	successes, admitted := float64(succ), float64(succ+fail)
	protection := f.protection
	mixed := false // the newest buckets agree on neither outcome
	if f.trustRecent {
		switch {
		case c.recentSuccesses == 0 && float64(c.recentFailures) > f.protection: // down
			successes, admitted = 0, float64(max(c.failures, min(fail, f.evidence/2)))
			if f.evidence > 0 && c.downBuckets >= f.buckets {
				protection = 0
			}
		case c.recentFailures == 0 && c.recentSuccesses > 0 &&
			(float64(c.recentSuccesses) > f.protection || f.evidence > 0 && c.recovering): // up
			return 0, 1
		default:
			mixed = true
		}
	}
	total := admitted
	if f.countDrops {
		// min(drops, (K−1)·admitted), written out: neither is NaN, and the
		// built-in min's care for NaN and −0 costs a fifth of a drop.
		counted := (f.k - 1) * admitted
		if d := float64(drops); d < counted {
			counted = d
		}
		total += counted
	}
	num, den = total-protection-f.k*successes, total+1
	if mixed && f.shifted(c) {
		if nnum, nden := f.newestRatio(c); !(num > 0) || nnum*den > num*nden {
			num, den = nnum, nden
		}
	}
	if !(num > 0) {
		return 0, 1
	}
	return num, den
}

// shiftSigmas is how many standard deviations the newest buckets' failures
// must exceed the window's share by for shifted.
const shiftSigmas = 3

// shifted reports whether the newest finished bucket and the current one
// hold enough calls to judge the dependency on alone (evidence of them)
// and fail more often than the window as a whole, by more than
// shiftSigmas standard deviations of a sample of their size: the
// dependency got worse within the window's span. Written without a
// division: with n the newest calls, x their failures, and w and y the
// window's, x − n·y/w > 3·√(n·(y/w)·(1 − y/w)) is
// (x·w − n·y)² > 9·n·y·(w − y), x·w − n·y being positive.
func (f *formula) shifted(c *tally) bool {
	n := c.newestSuccesses + c.newestFailures
	if f.evidence == 0 || n < f.evidence {
		return false
	}
	w, y := float64(c.successes+c.failures), float64(c.failures)
	excess := float64(c.newestFailures)*w - float64(n)*y
	return excess > 0 && excess*excess > shiftSigmas*shiftSigmas*float64(n)*y*(w-y)
}

// newestRatio is the formula's ratio over the newest finished bucket and
// the current one alone, their drops counted as the window's are.
func (f *formula) newestRatio(c *tally) (num, den float64) {
	admitted := float64(c.newestSuccesses + c.newestFailures)
	total := admitted
	if f.countDrops {
		total += min(float64(c.newestDrops), (f.k-1)*admitted)
	}
	return total - f.protection - f.k*float64(c.newestSuccesses), total + 1
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
