package breaker

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/evidence"
)

// cohort counts the calls one stripe admitted during one bucket, and how
// many came back, whenever that is: a call's promise points at its
// cohort, so that the breaker knows, for every call in flight, how long
// ago it was made (to within a bucket), with no clock read and no
// allocation per call. The stripe's live cohort takes the calls admitted
// now; when a bucket finishes it gives way to a new one and joins the
// cohorts with calls still out, newest first, through older.
//
// A call costs its cohort two atomic adds: one when it is admitted
// (started), one when it ends (ended). Its outcome is recorded in the
// level's window, on the stripe's lane (stripe.lane): Add(1) a success,
// Add(0) a failure, in the bucket it came back in. When a bucket
// finishes, the calls still out are looked at: see hangWatch.
type cohort struct {
	b *googleBreaker
	s *stripe
	// bucket is the number of the bucket the cohort's calls were made in.
	bucket  atomic.Int64
	started atomic.Int64
	// ended counts the calls that came back, with overdueBit set once
	// the cohort became overdue: the calls out then were counted as
	// failures, and an outcome that finds the bit counts no more. The
	// one word decides, for every call, which of the two counted it.
	ended atomic.Int64
	// others counts the calls that came back as failures or ignored:
	// ended less others is the successes, whose count says when a
	// success reads the clock (due).
	others atomic.Int64
	// read is how many calls the cohort had admitted at the last reading
	// of the clock by one of its stripe's calls that found its bucket
	// live: those calls were made in its bucket. A call admitted after
	// it, with no reading since, was made at some time up to the next
	// reading (see gaveWay).
	read atomic.Int64
	// state is cohortOut, cohortOverdue or cohortRetired.
	state atomic.Uint32
	// timed is set when WithSlowCall gave a threshold: a success is
	// timed against it. Set before the cohort is published.
	timed bool
	// older is the next older cohort of the stripe with calls out. Written
	// under the breaker's mu.
	older atomic.Pointer[cohort]
	// seen is the age, in buckets, at which the last take found calls of
	// the cohort out; 0 if none did. Guarded by the breaker's mu.
	seen int64
	// Padding keeps two stripes' cohorts, allocated one after the other,
	// off the pair of cache lines the other one's calls write.
	_ [128 - cohortFields]byte
}

// cohortFields is the size of a cohort's fields, which it pads to 128.
const cohortFields = 80

// overdueBit marks cohort.ended once the cohort became overdue.
const overdueBit = 1 << 62

// The states of a cohort.
const (
	// cohortOut: its calls count as they come back.
	cohortOut uint32 = iota
	// cohortOverdue: its calls still out when it became overdue were
	// counted as failures then; their outcomes count no more. A success
	// that comes back teaches the breaker how long calls now take.
	cohortOverdue
	// cohortRetired: the breaker follows it no more. All its calls came
	// back, or it was forgotten (older than hangWatch tracks, or the
	// breaker's time started afresh): an outcome that still comes back
	// counts in the live bucket, as every outcome does.
	cohortRetired
)

// newCohort returns a new cohort of s for calls made in bucket n.
func newCohort(s *stripe, n int64) *cohort {
	c := &cohort{b: s.counts.b, s: s, timed: s.counts.b.hang.slow != 0}
	c.bucket.Store(n)
	return c
}

// admitted counts a call admitted on s, and returns its cohort. When the
// count is due (admitDue), it reads the clock first, so that the call
// joins the cohort of its bucket: calls that never come back read it too.
// On the level's own stripe, a failed compare-and-swap is another
// goroutine admitting at the same time: the level spreads. admit writes
// out the common case.
func (s *stripe) admitted() *cohort {
	c := s.cohort.Load()
	if c == nil {
		c = s.firstCohort()
	}
	n := c.started.Load() + 1
	due := c.admitDue(n)
	if due {
		s.counts.b.advanceIfDue()
		c = s.cohort.Load()
	}
	if !s.spread {
		if old := c.started.Load(); c.started.CompareAndSwap(old, old+1) {
			if due {
				c.read.Store(old + 1) // made at the reading
			}
			return c
		}
		s.counts.contended()
	}
	if made := c.started.Add(1); due {
		c.read.Store(made)
	}
	return c
}

// admitDue reports whether the n-th call admitted into c reads the
// clock: each of the first exactCalls, so that light traffic is placed
// exactly, then one in admitEvery, or one in outEvery while more than
// outEvery of c's calls are out, so that a busy stripe whose calls do not
// come back still finds its buckets' ends. The outcomes, which read it as
// often as due says, place a busy stripe's calls.
func (c *cohort) admitDue(n int64) bool {
	return n <= exactCalls || n%admitEvery == 0 || n%outEvery == 0 && n-c.ended.Load()&^overdueBit > outEvery
}

// admitEvery is how many admitted calls of a busy cohort read the clock
// once, past its first exactCalls.
const admitEvery = 256

// outEvery is how many admitted calls of a busy cohort read the clock
// once while more than outEvery of its calls are out: calls that stop
// coming back (a hang) find their buckets' ends within outEvery
// admissions, not admitEvery, and keep the dates of their own buckets
// (see cohort.gaveWay). Measured on the mock clock, a hang at 400 calls a
// second was 90 % shed 1.1 s after it began, 2.1 s with one reading in
// admitEvery (TestBreaker_hang_shedBeforeTheTimeouts).
const outEvery = 32

// firstCohort makes the first cohort of s, for calls made in the live
// bucket.
func (s *stripe) firstCohort() *cohort {
	b := s.counts.b
	s.counts.makeWindow() // before any outcome is recorded on s.lane
	s.cohort.CompareAndSwap(nil, newCohort(s, floorDiv(b.bucketEnd.Load(), b.span)-1))
	return s.cohort.Load()
}

// readClock reads the clock for a call of s (advanceIfDue) and, when the
// reading finds the bucket of s's live cohort still live, notes on the
// cohort how many calls it had admitted before: they were made in its
// bucket (cohort.read).
func (s *stripe) readClock() {
	live := s.cohort.Load()
	n := live.started.Load() // before the reading
	if !s.counts.b.advanceIfDue() {
		live.read.Store(n)
	}
}

// promise is pointer-shaped, so returning it as a srebreaker.Promise does
// not allocate. It records on the cohort of the call.
type promise struct{ c *cohort }

func (p promise) Accept()              { p.c.markSuccess() }
func (p promise) Reject(reason string) { p.c.markFailure(reason) }

// RejectOverloaded records a failure as Reject does, the dependency
// marked overloaded first (see [srebreaker.OverloadRejecter]).
func (p promise) RejectOverloaded(reason string) {
	b := p.c.b
	p.c.s.readClock()
	b.markOverloaded()
	p.c.failed(reason)
}

// Ignore records that the call ended, and nothing else: the call says
// nothing about the dependency's health (see [srebreaker.Ignorer]), so it
// leaves the window as if the call had never been admitted.
func (p promise) Ignore() {
	p.c.others.Add(1)
	p.c.ended.Add(1)
}

// Resumed implements chain.Resumer: the call of p, whose promise was
// given up (Ignore) while its request waited on a guarded call, is
// counted again, admitted without a decision (it was admitted already)
// into the live cohort of its stripe, as an override's call is.
func (p promise) Resumed(chain.Resuming) srebreaker.Promise {
	b := p.c.b
	co := p.c.s.admitted()
	if b.hang.hanging.Load() { // the call, out, counts against the dependency at once
		b.judge()
	}
	return promise{co}
}

var _ chain.Resumer = promise{}

// markSuccess records a success: Add(1) on the stripe's lane. When due, it
// reads the clock first, so that the success lands in the bucket of its
// time; it judges after, with the success counted, when due or while calls
// are being dropped. A slow-call threshold takes it to timedSuccess.
func (c *cohort) markSuccess() {
	if c.timed {
		c.timedSuccess()
		return
	}
	b := c.b
	if !due(c.ended.Load()&^overdueBit - c.others.Load() + 1) {
		if c.ended.Add(1)&overdueBit != 0 {
			c.lateSuccess()
			return
		}
		c.s.lane.Add(1)
		if b.mode.Load()&modeShedding != 0 {
			b.judge()
		}
		return
	}
	c.s.readClock()
	if c.ended.Add(1)&overdueBit != 0 {
		c.lateSuccess()
		return
	}
	c.s.lane.Add(1)
	if b.mode.Load() != 0 {
		b.judge()
	}
}

// markFailure records a failure: Add(0) on the stripe's lane, the clock
// read first; then it judges.
func (c *cohort) markFailure(reason string) {
	c.s.readClock()
	c.failed(reason)
}

// failed records a failure, the clock read.
func (c *cohort) failed(reason string) {
	c.others.Add(1)
	if c.ended.Add(1)&overdueBit != 0 {
		return // counted as a failure when its cohort became overdue
	}
	c.countFailure(reason)
}

// countFailure counts a failure, the clock read.
func (c *cohort) countFailure(reason string) {
	b := c.b
	c.s.lane.Add(0)
	b.reasons.add(b.wallNow(), reason)
	b.setMode(modeFailing)
	b.judge()
}

// timedSuccess records a success under a slow-call threshold: a call that
// came back more than the threshold after the bucket it was made in is a
// failure. A retired cohort's bucket number may mean nothing (the
// breaker's time started afresh): its calls count as successes.
func (c *cohort) timedSuccess() {
	b := c.b
	retired := c.state.Load() == cohortRetired
	c.s.readClock()
	slow := !retired && b.liveBucket()-c.bucket.Load() > b.hang.slow
	if slow {
		c.others.Add(1)
	}
	switch overdue := c.ended.Add(1)&overdueBit != 0; {
	case overdue && slow:
		// Counted as a failure when its cohort became overdue, past the
		// same threshold: say why.
		b.reasons.add(b.wallNow(), b.hang.slowReason)
		return
	case overdue:
		c.lateSuccess()
		return
	case slow:
		c.countFailure(b.hang.slowReason)
		return
	}
	c.s.lane.Add(1)
	if b.mode.Load() != 0 {
		b.judge()
	}
}

// lateSuccess notes a success that came back after its cohort became
// overdue: counted as a failure already, it teaches how long calls take
// now.
func (c *cohort) lateSuccess() {
	b := c.b
	b.hang.late(min(b.liveBucket()-c.bucket.Load(), track(b.span)))
}

// liveBucket returns the number of the live bucket, as the last reading
// of the clock left it.
func (b *googleBreaker) liveBucket() int64 {
	return floorDiv(b.bucketEnd.Load(), b.span) - 1
}

// markOverloaded notes that the dependency rejected a call for overload
// in the live bucket. Callers read the clock first (advanceIfDue).
func (b *googleBreaker) markOverloaded() {
	b.overloadedAt.Store(b.liveBucket() + 1)
}

// judging returns the settings the breaker judges by: overloadSettings
// while the window holds an overload rejection, settings otherwise.
func (b *googleBreaker) judging() *evidence.Settings {
	if at := b.overloadedAt.Load(); at != 0 && b.liveBucket()-(at-1) < int64(b.settings.Buckets) {
		return &b.overloadSettings
	}
	return &b.settings
}

// take empties s's share of the live bucket and returns what it held,
// next being the number of the bucket that begins: its drops and, as
// failures, the calls that w finds overdue (the outcomes are the
// window's: counts.take). The live cohort gives way to a new one if it
// admitted a call. A cohort whose calls have all come back retires, and
// teaches w how long they took; one whose calls are still out past w's
// threshold becomes overdue. Both leave the stripe's list. Callers hold
// the breaker's mu.
func (s *stripe) take(next int64, w *hangWatch) evidence.Bucket {
	s.salt.Store(rand.Uint64())
	got := evidence.Bucket{Drops: dropsOf(s.decided.Swap(0))}
	live := s.cohort.Load()
	if live == nil {
		return got
	}
	if live.started.Load() > 0 {
		fresh := w.reuse(s, next)
		fresh.older.Store(live)
		s.cohort.Store(fresh)
		live.gaveWay(next)
		live = fresh
	} else {
		live.bucket.Store(next)
	}
	track := track(s.counts.b.span)
	after := w.after(track)
	prev := live
	for c := live.older.Load(); c != nil; c = c.older.Load() {
		started := c.started.Load() // before ended: a call that ends between is not taken for one out
		out := started - c.ended.Load()
		age := next - c.bucket.Load()
		switch {
		case out <= 0:
			// They came back after the take that last found them out:
			// by seen+1 buckets, as far as is known. After an idle spell
			// the age is the spell's, and says nothing of the calls.
			w.cameBack(c.seen+1, started)
			c.state.Store(cohortRetired)
			w.retire(c)
		case after > 0 && age > after:
			out = c.markOverdue(started)
			got.Failures += out
			w.overdue += out
		case age > track:
			c.state.Store(cohortRetired)
		default:
			c.seen = age
			prev = c
			continue
		}
		prev.older.Store(c.older.Load())
	}
	return got
}

// gaveWay dates c, the live cohort of its stripe until the bucket next
// began, by what is known of when its calls were made. Those it had
// admitted at the last reading of the clock (read) were made in its
// bucket; any made after, with no reading since, at some time before
// now: when no reading came in the buckets between, they may have been
// made after a pause, a moment ago. When every call out may be one of
// them, c is dated from next: its calls count as overdue once they are
// known to have been out for the threshold, never before. Calls made in
// c's bucket and still out keep it dated from that bucket. Callers hold
// the breaker's mu.
func (c *cohort) gaveWay(next int64) {
	if next-1 <= c.bucket.Load() {
		return // a reading in the bucket after c's would have taken it
	}
	read := c.read.Load()
	if c.started.Load() > read && c.ended.Load()&^overdueBit >= read {
		c.bucket.Store(next)
	}
}

// markOverdue marks c overdue, of which started calls were made, and
// returns how many were still out: they count as failures now, and their
// outcomes, when they come, count no more. A call that comes back at the
// same time is counted by one of the two: the compare-and-swap on ended
// orders them.
func (c *cohort) markOverdue(started int64) int64 {
	for {
		e := c.ended.Load()
		out := max(started-e, 0)
		if c.ended.CompareAndSwap(e, e|overdueBit) {
			c.state.Store(cohortOverdue)
			return out
		}
	}
}

// forget retires every cohort of s but the live one, which takes the
// calls made from bucket next on. Callers hold the breaker's mu.
func (s *stripe) forget(next int64) {
	live := s.cohort.Load()
	if live == nil {
		return
	}
	live.bucket.Store(next)
	for c := live.older.Load(); c != nil; c = c.older.Load() {
		c.state.Store(cohortRetired)
	}
	live.older.Store(nil)
}
