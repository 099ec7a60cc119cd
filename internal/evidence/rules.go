package evidence

// Rules is a set of the judge's rules, one bit each. Every rule is on in
// the breaker; [Settings.Without] turns some off, so that a simulation can
// measure what each one does. Aggression and counted drops are settings
// of their own ([Settings.Aggression], [Settings.CountDrops]).
type Rules uint32

// The rules [Settings.Ratio] and [Settings.FleetRatio] judge by, each of
// which needs TrustRecent, and all but RuleDown and RuleUp Evidence too.
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
	// RuleUnprotected: once a down run spans a window, protection no
	// longer applies.
	RuleUnprotected
	// RuleReadmit: after a down run that spanned a window, the first
	// bucket of only successes readmits.
	RuleReadmit
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
)

// Without returns s with rules turned off, for measuring them out.
func (s Settings) Without(rules Rules) Settings {
	s.off |= rules
	return s
}

// on reports whether rule r is on.
func (s *Settings) on(r Rules) bool { return s.off&r == 0 }
