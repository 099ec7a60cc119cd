package evidence

import "math"

// Rules is a set of the judge's rules, one bit each. Every rule is on in
// the breaker; [Settings.Without] turns some off, so that a simulation can
// measure what each one does. Aggression and counted drops are settings
// of their own ([Settings.Aggression], [Settings.CountDrops]).
type Rules uint32

// The rules [Settings.Ratio] and [Settings.FleetRatio] judge by.
// RuleReadBack needs Evidence; the others need TrustRecent, and all but
// RuleDown and RuleUp Evidence too.
const (
	// RuleDown: a run of failures, more than protection of them, sets the
	// older successes aside.
	RuleDown Rules = 1 << iota
	// RuleUp: a run of successes, more than protection of them, drops
	// nothing.
	RuleUp
	// RuleUnlikely: the run of failures must be unlikely from the other
	// calls' failure rate, or span a window.
	RuleUnlikely
	// RuleReadBack: on light traffic the counts are read back past the
	// window for Evidence admitted calls.
	RuleReadBack
	// RuleDownFloor: a dependency found down is judged on up to Evidence/2
	// of the failures read back for, when they are more than the window's.
	RuleDownFloor
	// RuleUnprotected: once a down run spans a window, or holds more
	// than twice protection's calls, failed or dropped, protection no
	// longer applies.
	RuleUnprotected
	// RuleRecovery: after such a run the recovery is judged on its own
	// calls.
	RuleRecovery
	// RuleShift: the newest buckets, when they fail clearly more often
	// than the window, are judged on their own calls.
	RuleShift
	// RuleFleetOwn: a process of a fleet with Evidence calls of its own
	// judges the window on them ([Settings.FleetRatio]).
	RuleFleetOwn
	// RuleFleetOwnUp: such a process whose newest run holds only
	// successes is not shed by the fleet's newest buckets.
	RuleFleetOwnUp
	// RuleFleetProbe: a fleet down for a window probes with each
	// process's share of its calls.
	RuleFleetProbe
	// RulePace: while a dependency has been down for a window, a call is
	// admitted at least every PaceBuckets, whatever the draws, and where
	// the draws would admit fewer, none on a draw ([Settings.ProbeDue],
	// [Settings.Paced]).
	RulePace
)

// Without returns s with rules turned off, for measuring them out.
func (s Settings) Without(rules Rules) Settings {
	s.off |= rules
	return s
}

// on reports whether rule r is on.
func (s *Settings) on(r Rules) bool { return s.off&r == 0 }

// countedDrops (CountDrops) is how many of drops count as requests beside
// admitted calls: at most K−1 per admitted call, so that the numerator
// stays at or below K·failures − protection, or all of them while
// Overloaded, unless picked says the counts are a run picked out of the
// history (a dependency down, a recovery, whose first bucket's drops were
// the outage's).
//
// The bound keeps a dependency that fails part of its calls from being
// shed on drops, but it also leaves the drops short of what the formula
// needs under overload: the drop probability then settles near the
// failure ratio^(1/Aggression), whatever K, and lets 1.78 calls through
// per success at 4× a server's capacity, 2.51 at 8× (the simulator). A
// server that answers "overloaded" serves what it can whatever it is
// sent, so counting every drop, as the book does, holds what reaches it
// near K per success, where K sets it (the breaker judges an overloaded
// dependency with an aggression of 1.1 at most, which holds it a little
// under K: docs/design/behaviour.md). The newest buckets, judged on
// their own when they fail more (RuleShift), count every drop too: capped
// there, 1.65 and 1.88 calls reached the server per success at 4× and 8×,
// 1.59 and 1.69 counted (with an aggression of 1).
func (s *Settings) countedDrops(drops, admitted float64, picked bool) float64 {
	if !s.CountDrops {
		return 0
	}
	if s.Overloaded && !picked {
		return drops
	}
	// min(drops, (K−1)·admitted), written out: neither is NaN.
	counted := (s.K - 1) * admitted
	if drops < counted {
		counted = drops
	}
	return counted
}

// readBack (RuleReadBack) returns the counts the formula judges on: the
// window's, or, while the window holds fewer than Evidence admitted calls,
// those read back past it for them, with the window's drops when they are
// more.
func (s *Settings) readBack(sum *Summary, live, window Bucket) Bucket {
	if s.Evidence == 0 || !s.on(RuleReadBack) || window.Admitted() >= s.Evidence {
		return window
	}
	if reach := sum.Reach.Plus(live); reach.Admitted() > window.Admitted() {
		return Bucket{reach.Successes, reach.Failures, max(window.Drops, reach.Drops)}
	}
	return window
}

// down (RuleDown) reports whether the newest run and the live bucket hold
// only failures, more than protection of them: the dependency is down,
// when the run is also unlikely by chance (unlikely).
func (s *Settings) down(recentSuccesses, recentFailures int64) bool {
	return recentSuccesses == 0 && float64(recentFailures) > s.Protection && s.on(RuleDown)
}

// downChance is how unlikely a run of failures must be, from a dependency
// failing as often as the calls read besides it did, for down.
const downChance = 1e-6

// unlikely (RuleUnlikely) reports whether a run of n failures, the newest
// of counts, spanning buckets buckets, is taken for down: it spans a
// window, or would come by chance less often than downChance from a
// dependency that failed as often as the other calls of counts, q^n <
// downChance with q their share of failures. It holds without Evidence,
// and when counts hold no success to set aside or no failure besides the
// run's: a dependency failing a fifth of its calls gives 6 failures in a
// row now and then, and is judged on its window then, not shed as down.
func (s *Settings) unlikely(n, buckets int64, counts Bucket) bool {
	if s.Evidence == 0 || !s.on(RuleUnlikely) || counts.Successes == 0 || buckets >= int64(s.Buckets) {
		return true
	}
	failures, admitted := counts.Failures-n, counts.Admitted()-n
	if failures <= 0 || admitted <= 0 {
		return true
	}
	return math.Pow(float64(failures)/float64(admitted), float64(n)) < downChance
}

// downFloorPart: a dependency found down is judged on up to
// Evidence/downFloorPart of the failures read back for, enough to shed
// firmly, few enough that the calls let through notice a recovery.
const downFloorPart = 2

// downFailures (RuleDownFloor) is how many failures a dependency found
// down is judged on: the window's, or up to Evidence/downFloorPart of
// those counts read back for, whichever are more.
func (s *Settings) downFailures(window, counts Bucket) float64 {
	if !s.on(RuleDownFloor) {
		return float64(window.Failures)
	}
	return float64(max(window.Failures, min(counts.Failures, s.Evidence/downFloorPart)))
}

// unprotected (RuleUnprotected) reports whether protection no longer
// applies to a dependency found down: with Evidence, once its down run
// spans a window, or once calls, the run's failures with the calls the
// window dropped, are more than twice protection. Protection keeps a few
// failures from shedding, and a window of them is not a few, nor are
// twice as many as it tolerates: at 20 calls a second, a dependency down
// is shed at 0.9 or more within half a second, not two.
func (s *Settings) unprotected(sum *Summary, calls int64) bool {
	return s.Evidence > 0 && s.on(RuleUnprotected) &&
		(sum.run.downBuckets >= int64(s.Buckets) || float64(calls) > 2*s.Protection)
}

// up (RuleUp) reports whether the dependency is up: the newest run and the
// live bucket hold only successes, more than protection of them.
func (s *Settings) up(recentSuccesses int64) bool {
	return s.on(RuleUp) && recentSuccesses > 0 && float64(recentSuccesses) > s.Protection
}

// recovery (RuleRecovery) returns the recovery's calls and the live
// bucket's, and whether there is one: with Evidence, the buckets since a
// down run that spanned a window gave way (see run). A healed dependency
// that still fails a few of its calls is judged on what it does now, not
// on the outage's failures still in the window; its first bucket of only
// successes readmits it.
//
// A recovery also begins in the live bucket, on the down run's newest
// finished bucket, when the live bucket holds successes and no failure:
// the success of a call let through is judged at once, not when its
// bucket ends. Its drops are left out, as run.start leaves them out.
func (s *Settings) recovery(sum *Summary, live Bucket) (Bucket, bool) {
	if s.Evidence == 0 || !s.on(RuleRecovery) {
		return Bucket{}, false
	}
	if sum.run.recBuckets == 0 {
		if sum.run.downBuckets >= int64(s.Buckets) && sum.run.down > 0 && live.Successes > 0 && live.Failures == 0 {
			return Bucket{Successes: live.Successes}, true
		}
		return Bucket{}, false
	}
	return sum.run.rec.Plus(live), true
}

// shiftSigmas is how many standard deviations the newest buckets' failures
// must exceed the share of what they are compared with by, for shifted.
const shiftSigmas = 3

// shifted (RuleShift) reports whether newest, the newest finished bucket
// and the live one, holds enough calls to judge the dependency on alone
// (Evidence of them) and fails more often than base as a whole, by more
// than shiftSigmas standard deviations of a sample of its size: the
// dependency got worse within the window's span. Written without a
// division: with n the newest calls, x their failures, and w and y base's,
// x − n·y/w > 3·√(n·(y/w)·(1 − y/w)) is (x·w − n·y)² > 9·n·y·(w − y),
// x·w − n·y being positive.
func (s *Settings) shifted(base, newest Bucket) bool {
	n := newest.Admitted()
	if s.Evidence == 0 || !s.on(RuleShift) || n < s.Evidence {
		return false
	}
	w, y := float64(base.Admitted()), float64(base.Failures)
	excess := float64(newest.Failures)*w - float64(n)*y
	return excess > 0 && excess*excess > shiftSigmas*shiftSigmas*float64(n)*y*(w-y)
}
