package serverside

import (
	"sync/atomic"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// prober holds what the probe rule (evidence.ProbeDue) reads.
type prober struct {
	dropped   atomic.Int64 // calls the breaker dropped since it last admitted one
	failedRun atomic.Int64 // calls served that failed in a row, the newest last
	healed    atomic.Bool  // a probe succeeded after evidence.DownFailures, and nothing failed since
}

// admitted notes a call the breaker admitted.
func (p *prober) admitted() {
	if p.dropped.Load() != 0 {
		p.dropped.Store(0)
	}
}

// Probe notes a call the breaker dropped and reports whether it is to be
// served all the same, as a probe (see evidence.ProbeDue). A probe is served with
// the promise [Probe]: the breaker counted it as a drop, and its outcome,
// given to [Overload.Finished], is noted only here.
func (o *Overload) Probe() bool {
	p := &o.probes
	return evidence.ProbeDue(p.dropped.Add(1), p.failedRun.Load(), p.healed.Load())
}

// Finished notes how a call the server served ended, x as the
// transport's classifier recorded it, probe whether it was served as a
// probe.
func (o *Overload) Finished(x Outcome, probe bool) {
	p := &o.probes
	switch x {
	case Success:
		if !p.healed.Load() && evidence.HealedBy(probe, p.failedRun.Load()) {
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
