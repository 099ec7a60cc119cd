package serverside

import "sync/atomic"

// The probe rule's constants, measured in docs/behaviour.md ("Client and
// server breakers recovering together") and explained in docs/algorithm.md
// ("The server's probe").
const (
	// probeEvery is how many calls in a row the breaker must drop for the
	// next one it drops to be served all the same, as a probe.
	probeEvery = 40
	// downFailures is how many calls served in a row must have failed,
	// and none succeeded since, for the dependency to look down: only then
	// does the server probe it. A dependency that serves some calls (an
	// overload, or shedding by criticality) is left to the breaker.
	downFailures = 3
)

// probeDue is the probe rule, data in, answer out: whether a call the
// breaker dropped is served all the same, as a probe, given dropped, the
// calls the breaker dropped in a row since it last admitted one, this one
// included; failedRun, the calls served (admitted or probes) that failed
// in a row, the newest last, with no success since; and healed, whether a
// probe succeeded while the dependency looked down, with no failure
// since. While the dependency looks down, every probeEvery-th drop in a
// row is a probe; once a probe has succeeded, every drop is, until a call
// served fails.
func probeDue(dropped, failedRun int64, healed bool) bool {
	return healed || dropped%probeEvery == 0 && failedRun >= downFailures
}

// healedBy reports whether a call served that succeeded shows the
// dependency healed: a probe, while the dependency looked down.
func healedBy(probe bool, failedRun int64) bool {
	return probe && failedRun >= downFailures
}

// prober holds what probeDue reads.
type prober struct {
	dropped   atomic.Int64 // calls the breaker dropped since it last admitted one
	failedRun atomic.Int64 // calls served that failed in a row, the newest last
	healed    atomic.Bool  // a probe succeeded after downFailures, and nothing failed since
}

// admitted notes a call the breaker admitted.
func (p *prober) admitted() {
	if p.dropped.Load() != 0 {
		p.dropped.Store(0)
	}
}

// Probe notes a call the breaker dropped and reports whether it is to be
// served all the same, as a probe (see probeDue). A probe is served with
// the promise [Probe]: the breaker counted it as a drop, and its outcome,
// given to [Overload.Finished], is noted only here.
func (o *Overload) Probe() bool {
	p := &o.probes
	return probeDue(p.dropped.Add(1), p.failedRun.Load(), p.healed.Load())
}

// Finished notes how a call the server served ended, x as the
// transport's classifier recorded it, probe whether it was served as a
// probe.
func (o *Overload) Finished(x Outcome, probe bool) {
	p := &o.probes
	switch x {
	case Success:
		if !p.healed.Load() && healedBy(probe, p.failedRun.Load()) {
			p.healed.Store(true)
		}
		if p.failedRun.Load() != 0 {
			p.failedRun.Store(0)
		}
	case Ignore:
	default:
		p.failedRun.Add(1)
		if p.healed.Load() {
			p.healed.Store(false)
		}
	}
}

// Probe is the promise of a call served as a probe although the breaker
// dropped it: it records nothing (see [Overload.Probe]). A transport tells
// a probe by its type.
type Probe struct{}

func (Probe) Accept()       {}
func (Probe) Reject(string) {}
func (Probe) Ignore()       {}
