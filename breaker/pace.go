package breaker

// Paced calls while shedding: at a drop probability near 1 on light
// traffic, the draws let a call through seldom and at uneven times, and a
// healed dependency waits for the next of them. While a dependency has
// been down for a window, once PaceBuckets−1 buckets in a row have
// finished without an admitted call, the next call that would be dropped
// is admitted instead, with no draw (modeProbe, evidence.Settings.ProbeDue);
// and where the draws would let fewer calls through than that, none is
// admitted on a draw (modePaced, evidence.Settings.Paced): the paced
// calls stand in for them, evenly. The call path pays for it only on a
// drop, with tests of the mode word it has read already.

// countUnadmitted counts the live bucket, about to finish, and passed
// empty buckets after it into b.unadmitted: it starts again from the
// passed buckets when the live bucket admitted a call. Callers hold b.mu.
func (b *googleBreaker) countUnadmitted(passed int64) {
	admitted := b.counts.admittedAny()
	if lv := b.levels.Load(); lv != nil {
		for _, x := range lv {
			admitted = admitted || x.counts.admittedAny()
		}
	}
	if admitted {
		b.unadmitted = passed
	} else {
		b.unadmitted += passed + 1
	}
}

// pace sets modeProbe when a call is due (the finished buckets admitted
// none for long enough while calls are dropped), and clears it otherwise;
// it sets modePaced while the paced calls alone are admitted
// (evidence.Settings.Paced), and clears it otherwise.
func (b *googleBreaker) pace(due, paced bool) {
	b.markMode(modeProbe, due)
	b.markMode(modePaced, paced)
}

// markMode sets or clears bits in mode, writing only on a change.
func (b *googleBreaker) markMode(bits uint32, on bool) {
	switch m := b.mode.Load() & bits; {
	case on && m != bits:
		b.setMode(bits)
	case !on && m != 0:
		b.clearMode(bits)
	}
}

// takeProbe clears modeProbe, and reports whether this call did: the one
// call that did is admitted as a paced call.
func (b *googleBreaker) takeProbe() bool {
	for {
		old := b.mode.Load()
		if old&modeProbe == 0 {
			return false
		}
		if b.mode.CompareAndSwap(old, old&^modeProbe) {
			return true
		}
	}
}
