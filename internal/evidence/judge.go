package evidence

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

// Ratio returns the share of calls to drop before aggression,
//
//	max(0, (total − protection − K·accepts) / (total + 1))
//
// as a fraction num/den, num 0 when nothing is dropped, over the finished
// buckets sum judged and the live bucket: accepts the successes, total the
// admitted calls, plus, with CountDrops, the drops up to (K−1)·admitted,
// or all of them while Overloaded (countedDrops). A window without
// failures drops nothing, whatever else the history holds: drops alone
// never keep a dependency shed, and on light traffic a dependency shed on
// older evidence gets a call through once a window has passed without an
// admitted failure.
//
// With Evidence, on light traffic the counts are read back past the window
// (readBack). With TrustRecent, the newest run of agreeing buckets and the
// live one are trusted over the window, the first rule that holds judging:
//   - down: only failures, more than protection, and a run unlikely from
//     the other calls' failure rate or spanning a window (unlikely): older
//     successes are set aside, the failures counted are the window's or up
//     to Evidence/2 of those read back (downFailures), and protection no
//     longer applies once the run spans a window or holds, with the
//     window's drops, more than twice its calls (unprotected);
//   - up: only successes, more than protection: nothing is dropped;
//   - recovery: after a down run that spanned a window, the buckets since
//     it gave way are judged on their own calls, from a live bucket of
//     successes alone on (recovery);
//   - otherwise the window is.
//
// Unless down or up, when the newest finished bucket and the live one hold
// Evidence calls and fail clearly more often than what they are compared
// with (shifted), the formula over those two buckets alone is taken if it
// drops more. Each rule is a function of rules.go, with its constants.
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
	if window.Admitted() < s.Evidence { // light traffic, the only case readBack reads back
		counts = s.readBack(sum, live, window)
	}
	successes, admitted := float64(counts.Successes), float64(counts.Admitted())
	protection := s.Protection
	mixed := false    // the newest buckets agree on neither outcome
	onWindow := false // and no recovery is judged on its own calls
	base := window    // what the newest buckets are compared with
	if s.TrustRecent {
		rec, recovering := s.recovery(sum, live)
		switch {
		case s.down(recentSuccesses, recentFailures) && s.unlikely(recentFailures, sum.run.downBuckets, counts):
			successes, admitted = 0, s.downFailures(window, counts)
			if s.unprotected(sum, recentFailures+window.Drops) {
				protection = 0
			}
		case s.up(recentSuccesses):
			return 0, 1
		case recovering:
			base, counts = rec, rec
			successes, admitted = float64(rec.Successes), float64(rec.Admitted())
			mixed = true
		default:
			mixed, onWindow = true, true
		}
	}
	if onWindow && mine == ownUp {
		return 0, 1
	}
	num, den = s.formula(successes, admitted, float64(counts.Drops), protection, s.TrustRecent && !onWindow)
	if onWindow && mine == ownWindow {
		num, den = 0, 1
	}
	if mixed {
		if newest := sum.Newest.Plus(live); s.shifted(base, newest) {
			nnum, nden := s.formula(float64(newest.Successes), float64(newest.Admitted()), float64(newest.Drops), s.Protection, false)
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

// formula is the card's numerator and denominator, drops counted when the
// settings say so; picked says the counts are a run picked out of the
// history (see countedDrops).
func (s *Settings) formula(successes, admitted, drops, protection float64, picked bool) (num, den float64) {
	total := admitted + s.countedDrops(drops, admitted, picked)
	return total - protection - s.K*successes, total + 1
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
