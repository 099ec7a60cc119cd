package evidence

import "math"

// Summary is the judgement of a history's finished buckets, made once when
// a bucket finishes ([History.Summarize]); [Settings.Ratio] combines it with
// the live bucket on each call.
type Summary struct {
	// Window is the sum of the finished buckets in the window; Newest the
	// newest finished bucket.
	Window, Newest Bucket
	// Reach is the newest finished buckets, read back past the window
	// until they hold Evidence admitted calls or reach the horizon: only
	// while the window holds fewer, zero otherwise.
	Reach Bucket
	run   run
}

// Summarize judges h's finished buckets.
func (h *History) Summarize() Summary {
	return Summary{Window: h.window, Newest: h.newest, Reach: h.reach(), run: h.run}
}

// reach reads back from the newest finished bucket while the window holds
// fewer than evidence admitted calls: the window's buckets whole, then
// blocks, the last of them only in the part still wanted, in its
// proportions, so that a window's worth of older calls does not outweigh
// the newer ones.
func (h *History) reach() Bucket {
	if h.horizon == 0 || h.window.Admitted() >= h.evidence {
		return Bucket{}
	}
	got := h.window
	h.Blocks(func(_ int64, b Bucket) bool {
		need := h.evidence - got.Admitted()
		if n := b.Admitted(); n > need {
			f := (b.Failures*need + n/2) / n
			got = got.Plus(Bucket{Successes: need - f, Failures: f, Drops: b.Drops * need / n})
			return false
		}
		got = got.Plus(b)
		return got.Admitted() < h.evidence
	})
	return got
}

// shiftSigmas is how many standard deviations the newest buckets' failures
// must exceed the window's share by for shifted.
const shiftSigmas = 3

// Ratio returns the share of calls to drop before aggression,
//
//	max(0, (total − protection − K·accepts) / (total + 1))
//
// as a fraction num/den, num 0 when nothing is dropped, over the finished
// buckets sum judged and the live bucket: accepts the successes, total the
// admitted calls, plus, with CountDrops, the drops up to (K−1)·admitted.
//
// With TrustRecent, when the newest run of buckets and the live one hold
// only failures, more than protection of them, older successes are set
// aside (accepts is 0, total the failures), provided, with Evidence, that
// such a run is unlikely from a dependency failing as often as the other
// calls judged did (see unlikely), or spans a window: a dependency that
// fails a fifth of its calls gives 6 failures in a row now and then, and
// is judged on its window then, not shed as down. When they hold only
// successes, more than protection of them, nothing is dropped. When they agree on
// neither, and the newest finished bucket and the live one hold Evidence
// calls or more and fail clearly more often than the window (see shifted),
// the formula over those two buckets alone, drops counted alike, is taken
// if it drops more: an overload that begins is judged on its own calls,
// not on the window's older successes.
//
// With Evidence, on light traffic (a window holding fewer admitted calls
// than Evidence):
//   - the counts are those read back for, past the window (the drops too,
//     when they are more than the window's);
//   - a dependency found down is judged on the window's failures, or on
//     up to Evidence/2 of those read back for, whichever are more; and
//     once its failing buckets have spanned a whole window, protection no
//     longer applies: it has kept a few failures from shedding, and these
//     are not a few;
//   - after such a run, the first bucket of only successes, with the live one, is
//     enough to readmit: nothing is dropped.
//
// With Evidence, whatever the traffic, after such a run the recovery (the
// buckets from the first that held successes and that the formula, over
// its own calls, sheds nothing, until a bucket holds failures alone, for
// less than a window) is judged on its own calls and the live bucket's:
// the formula over them, the newest buckets compared with them rather
// than with the window, the drops of its first bucket left out (they were
// decided on the down run). A healed dependency that still fails a few of its
// calls, as it did before the outage, is readmitted on what it does now,
// not held back by the outage's failures still in the window; one that
// fails again is judged on those same calls, and shed at once by the down
// run when its buckets hold failures alone.
//
// The cap on counted drops keeps the numerator at or below
// K·failures − protection, so drops alone never keep a dependency shed once
// its failures have left the window: without failures in the window the
// ratio is 0, whatever else the history holds. On light traffic this is
// the breaker's probe: a dependency shed on older evidence gets a call
// through once a window has passed without an admitted failure.
func (s *Settings) Ratio(sum *Summary, live Bucket) (num, den float64) {
	recentSuccesses, recentFailures := sum.run.recent(live)
	return s.ratio(sum, live, recentSuccesses, recentFailures, ownNone)
}

// ratio is Ratio given the newest run's counts with the live bucket. When
// the newest buckets agree on neither outcome and no recovery is judged,
// mine says what a process of a fleet has of its own ([Settings.FleetRatio]):
// with ownWindow the formula over the window is left out (the process
// judges it on its own window), with ownUp the newest buckets' as well.
// Ratio passes ownNone.
func (s *Settings) ratio(sum *Summary, live Bucket, recentSuccesses, recentFailures int64,
	mine ownJudgement) (num, den float64) {
	window := sum.Window.Plus(live)
	if window.Failures == 0 {
		return 0, 1
	}
	counts := window
	if s.Evidence > 0 && s.on(RuleReadBack) && window.Admitted() < s.Evidence {
		if reach := sum.Reach.Plus(live); reach.Admitted() > window.Admitted() {
			counts = Bucket{reach.Successes, reach.Failures, max(window.Drops, reach.Drops)}
		}
	}
	successes, admitted := float64(counts.Successes), float64(counts.Admitted())
	protection := s.Protection
	mixed := false    // the newest buckets agree on neither outcome
	onWindow := false // and no recovery is judged on its own calls
	base := window    // what the newest buckets are compared with
	if s.TrustRecent {
		switch {
		case s.on(RuleDown) && recentSuccesses == 0 && float64(recentFailures) > s.Protection &&
			(sum.run.downBuckets >= int64(s.Buckets) || s.unlikely(recentFailures, counts)): // down
			failures := window.Failures
			if s.on(RuleDownFloor) {
				failures = max(window.Failures, min(counts.Failures, s.Evidence/2))
			}
			successes, admitted = 0, float64(failures)
			if s.Evidence > 0 && s.on(RuleUnprotected) && sum.run.downBuckets >= int64(s.Buckets) {
				protection = 0
			}
		case s.on(RuleUp) && recentSuccesses > 0 && float64(recentSuccesses) > s.Protection: // up
			return 0, 1
		case s.on(RuleRecovery) && s.Evidence > 0 && sum.run.recBuckets > 0: // recovering: judged on its own calls
			base = sum.run.rec.Plus(live)
			counts = base
			successes, admitted = float64(base.Successes), float64(base.Admitted())
			mixed = true
		case s.on(RuleReadmit) && recentSuccesses > 0 && s.Evidence > 0 && sum.run.recovering: // up, after a window down
			return 0, 1
		default:
			mixed, onWindow = true, true
		}
	}
	if onWindow && mine == ownUp {
		return 0, 1
	}
	num, den = s.formula(successes, admitted, float64(counts.Drops), protection)
	if onWindow && mine == ownWindow {
		num, den = 0, 1
	}
	if mixed {
		if newest := sum.Newest.Plus(live); s.shifted(base, newest) {
			nnum, nden := s.formula(float64(newest.Successes), float64(newest.Admitted()), float64(newest.Drops), s.Protection)
			if !(num > 0) || nnum*den > num*nden {
				num, den = nnum, nden
			}
		}
	}
	if !(num > 0) {
		return 0, 1
	}
	return num, den
}

// downChance is how unlikely a run of failures must be, from a dependency
// failing as often as the calls read besides it did, for down.
const downChance = 1e-6

// unlikely reports whether a run of n failures, the newest of counts, would
// come by chance less often than downChance from a dependency that failed
// as often as the other calls of counts: q^n < downChance, q their share
// of failures. It holds without Evidence, and when counts hold no success
// to set aside or no failure besides the run's.
func (s *Settings) unlikely(n int64, counts Bucket) bool {
	if s.Evidence == 0 || !s.on(RuleUnlikely) || counts.Successes == 0 {
		return true
	}
	failures, admitted := counts.Failures-n, counts.Admitted()-n
	if failures <= 0 || admitted <= 0 {
		return true
	}
	return math.Pow(float64(failures)/float64(admitted), float64(n)) < downChance
}

// formula is the card's numerator and denominator, drops counted when the
// settings say so.
func (s *Settings) formula(successes, admitted, drops, protection float64) (num, den float64) {
	total := admitted
	if s.CountDrops {
		// min(drops, (K−1)·admitted), written out: neither is NaN.
		counted := (s.K - 1) * admitted
		if drops < counted {
			counted = drops
		}
		total += counted
	}
	return total - protection - s.K*successes, total + 1
}

// shifted reports whether newest, the newest finished bucket and the live
// one, holds enough calls to judge the dependency on alone (Evidence of
// them) and fails more often than window as a whole, by more than
// shiftSigmas standard deviations of a sample of its size: the dependency
// got worse within the window's span. Written without a division: with n
// the newest calls, x their failures, and w and y the window's,
// x − n·y/w > 3·√(n·(y/w)·(1 − y/w)) is (x·w − n·y)² > 9·n·y·(w − y),
// x·w − n·y being positive.
func (s *Settings) shifted(window, newest Bucket) bool {
	n := newest.Admitted()
	if s.Evidence == 0 || !s.on(RuleShift) || n < s.Evidence {
		return false
	}
	w, y := float64(window.Admitted()), float64(window.Failures)
	excess := float64(newest.Failures)*w - float64(n)*y
	return excess > 0 && excess*excess > shiftSigmas*shiftSigmas*float64(n)*y*(w-y)
}

// Drops reports whether a call is dropped, given the formula's ratio
// num/den and a draw u uniform in [0, 1): when u < (num/den)^(1/aggression),
// compared as u^aggression·den < num, which needs no division, nor a power
// for the usual aggressions.
func (s *Settings) Drops(num, den, u float64) bool {
	switch s.Aggression {
	case 1:
		return u*den < num
	case 1.5:
		return u*u*u*(den*den) < num*num
	case 2:
		return u*u*den < num
	}
	return s.Probability(num, den) > u
}
