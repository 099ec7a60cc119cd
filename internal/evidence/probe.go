package evidence

// The server's probe: a server whose breaker sheds a dependency that looks
// down serves a call it dropped now and then all the same, so that a
// client's breaker and the server's own find it healed together
// (docs/design/algorithm.md, "The server's probe", has the measurement that
// chose these numbers).
const (
	// ProbeEvery is how many calls in a row the breaker must drop for the
	// next one it drops to be served all the same, as a probe.
	ProbeEvery = 40
	// DownFailures is how many calls served in a row must have failed,
	// and none succeeded since, for the dependency to look down: only then
	// does the server probe it. A dependency that serves some calls (an
	// overload, or shedding by criticality) is left to the breaker.
	DownFailures = 3
)

// ProbeDue is the probe rule, data in, answer out: whether a call the
// breaker dropped is served all the same, as a probe, given dropped, the
// calls the breaker dropped in a row since it last admitted one, this one
// included; failedRun, the calls served (admitted or probes) that failed
// in a row, the newest last, with no success since; and healed, whether a
// probe succeeded while the dependency looked down, with no failure
// since. While the dependency looks down, every ProbeEvery-th drop in a
// row is a probe; once a probe has succeeded, every drop is, until a call
// served fails.
func ProbeDue(dropped, failedRun int64, healed bool) bool {
	return healed || dropped%ProbeEvery == 0 && failedRun >= DownFailures
}

// HealedBy reports whether a call served that succeeded shows the
// dependency healed: a probe, while the dependency looked down.
func HealedBy(probe bool, failedRun int64) bool {
	return probe && failedRun >= DownFailures
}
