package breaker

import (
	"time"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// The breaker's time axis, and the finishing of its buckets as the time
// it reads passes their ends.

// rebaseAfter is how far from the start the breaker's time may run before
// the breaker starts afresh from the time it reads: far beyond any real
// run, and far from the limits of int64, so that no bucket arithmetic
// overflows, whatever a clock given by WithClock reads.
const rebaseAfter = 1 << 62

// now returns the breaker's time: ns since its start. On the system clock
// it reads the monotonic clock alone (time.Since), which costs about half
// of time.Now.
func (b *googleBreaker) now() int64 {
	if b.clock == nil {
		return int64(time.Since(*b.start.Load()))
	}
	for {
		start := b.start.Load()
		t := b.clock.Now()
		if d := t.Sub(*start); d < rebaseAfter && d > -rebaseAfter {
			return int64(d)
		}
		// A clock that leapt centuries: start afresh from it.
		if b.start.CompareAndSwap(start, &t) {
			b.mu.Lock()
			b.restartLocked(0)
			b.mu.Unlock()
			return 0
		}
	}
}

// wallNow returns the time a failure reason or an event is stamped with.
func (b *googleBreaker) wallNow() time.Time {
	if b.clock == nil {
		return time.Now()
	}
	return b.clock.Now()
}

// tick reads the clock: when the live bucket has ended, it finishes it
// (advance); otherwise, while calls may be dropped, it judges the live
// bucket. A clock that steps back by less than the window is taken to stand
// still: calls go to the live bucket until it has caught up. One that steps
// back by more starts the breaker's window afresh.
func (b *googleBreaker) tick() {
	if !b.advanceIfDue() && b.mode.Load() != 0 {
		b.judge()
	}
}

// advanceIfDue reads the clock and, when the live bucket has ended,
// finishes it (advance). It reports whether it did.
func (b *googleBreaker) advanceIfDue() bool {
	t := b.now()
	if b.fleet.others.Load() != nil {
		b.fleet.now.Store(t)
	}
	if end := b.bucketEnd.Load(); t >= end || t < end-b.window {
		b.advance(t)
		return true
	}
	return false
}

// advance finishes the live bucket, and the empty ones after it, up to
// time t, then judges. A caller that finds another goroutine did it judges
// all the same.
func (b *googleBreaker) advance(t int64) {
	b.mu.Lock()
	end := b.bucketEnd.Load()
	switch {
	case t < end-b.window:
		b.restartLocked(t)
	case t >= end:
		n := floorDiv(t, b.span)
		b.finishLocked(n - b.live - 1)
		b.live = n
		b.bucketEnd.Store((n + 1) * b.span)
	}
	b.judgeFinishedLocked()
	sum := &b.judged.Load().sum
	probe := b.settings.ProbeDue(b.unadmitted, sum)
	b.mu.Unlock()
	p := b.judge()
	// A fleet probes with each process's share of its calls
	// (evidence.RuleFleetProbe): a process that holds others' buckets
	// paces nothing of its own.
	fleet := b.fleet.others.Load().holdsCalls()
	b.pace(probe && p > 0 && !fleet, !fleet && b.settings.Paced(p, sum))
	if b.events != nil {
		b.events.observe(b, t, p)
	}
}

// finishLocked finishes the live bucket of every level, passed empty
// buckets after it, with the calls out that have become overdue (see
// hangWatch). Callers hold b.mu.
func (b *googleBreaker) finishLocked(passed int64) {
	next := b.live + passed + 1
	b.countUnadmitted(passed)
	w := &b.hang
	w.begin()
	var all evidence.Bucket
	if lv := b.levels.Load(); lv != nil {
		for _, x := range lv {
			done := x.counts.take(next, w)
			x.history.Finish(done, passed)
			x.lifetime = x.lifetime.Plus(done)
			all = all.Plus(done)
		}
	} else {
		all = b.counts.take(next, w)
	}
	if w.overdue > 0 {
		b.reasons.add(b.wallNow(), overdueReason(w.after(track(b.span)), time.Duration(b.span)))
	}
	w.end()
	b.history.Finish(all, passed)
	b.lifetime = b.lifetime.Plus(all)
}

// restartLocked empties the window, keeping the lifetime figures, and
// starts it afresh at time t. Callers hold b.mu.
func (b *googleBreaker) restartLocked(t int64) {
	b.finishLocked(0)
	b.history.Reset(b.settings)
	if lv := b.levels.Load(); lv != nil {
		for _, x := range lv {
			x.history.Reset(b.settings)
		}
	}
	b.live = floorDiv(t, b.span)
	b.bucketEnd.Store((b.live + 1) * b.span)
	b.counts.forget(b.live)
	if lv := b.levels.Load(); lv != nil {
		for _, x := range lv {
			x.counts.forget(b.live)
		}
	}
}

// floorDiv is a/n rounded down, for a clock set before the breaker's start.
func floorDiv(a, n int64) int64 {
	q := a / n
	if a%n != 0 && a < 0 {
		q--
	}
	return q
}
