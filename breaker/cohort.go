package breaker

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// cohort counts the calls one stripe admitted during one bucket, and their
// outcomes as they come back, whenever that is: a call's promise points at
// its cohort, so that the breaker knows, for every call in flight, how
// long ago it was made (to within a bucket), with no clock read and no
// allocation per call. The stripe's live cohort takes the calls admitted
// now; when a bucket finishes it gives way to a new one and joins the
// cohorts with calls still out, newest first, through older.
//
// A call costs its cohort two atomic adds: one when it is admitted
// (started), one when it ends (successes, failures or ignored). The
// outcomes recorded since the last bucket finished are the live bucket
// (stripe.live); when a bucket finishes they go to it (stripe.take), and
// the calls still out are looked at: see hangWatch.
type cohort struct {
	b *googleBreaker
	s *stripe
	// bucket is the number of the bucket the cohort's calls were made in.
	bucket                       atomic.Int64
	started                      atomic.Int64
	successes, failures, ignored atomic.Int64
	// state is cohortOut, cohortOverdue or cohortRetired.
	state atomic.Uint32
	// timed is set when WithSlowCall gave a threshold: a success is
	// timed against it. Set before the cohort is published.
	timed bool
	// countedSuccesses and countedFailures are the outcomes already
	// counted in a finished bucket. Written under the breaker's mu.
	countedSuccesses, countedFailures atomic.Int64
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
const cohortFields = 96

// The states of a cohort.
const (
	// cohortOut: its outcomes count as they come back.
	cohortOut uint32 = iota
	// cohortOverdue: its calls still out when it became overdue were
	// counted as failures then; their outcomes count no more. A success
	// that comes back teaches the breaker how long calls now take.
	cohortOverdue
	// cohortRetired: it no longer counts anything. All its calls came
	// back, or it was forgotten (older than hangWatch tracks, or the
	// breaker's time started afresh): an outcome that still comes back
	// counts as a call of the stripe's live cohort.
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
	if admitDue(c.started.Load() + 1) {
		s.counts.b.advanceIfDue()
		c = s.cohort.Load()
	}
	if !s.spread {
		if old := c.started.Load(); c.started.CompareAndSwap(old, old+1) {
			return c
		}
		s.counts.contended()
	}
	c.started.Add(1)
	return c
}

// admitDue reports whether the n-th call admitted into a cohort reads the
// clock: each of the first exactCalls, so that light traffic is placed
// exactly, then one in admitEvery, so that a busy stripe whose calls do
// not come back still finds its buckets' ends. The outcomes, which read
// it as often as due says, place a busy stripe's calls.
func admitDue(n int64) bool { return n <= exactCalls || n%admitEvery == 0 }

// admitEvery is how many admitted calls of a busy cohort read the clock
// once, past its first exactCalls.
const admitEvery = 256

// firstCohort makes the first cohort of s, for calls made in the live
// bucket.
func (s *stripe) firstCohort() *cohort {
	b := s.counts.b
	s.cohort.CompareAndSwap(nil, newCohort(s, floorDiv(b.bucketEnd.Load(), b.span)-1))
	return s.cohort.Load()
}

// promise is pointer-shaped, so returning it as a srebreaker.Promise does
// not allocate. It records on the cohort of the call.
type promise struct{ c *cohort }

func (p promise) Accept()              { p.c.markSuccess() }
func (p promise) Reject(reason string) { p.c.markFailure(reason) }

// Ignore records that the call ended, and nothing else: the call says
// nothing about the dependency's health (see [srebreaker.Ignorer]), so it
// leaves the window as if the call had never been admitted.
func (p promise) Ignore() { p.c.ignored.Add(1) }

// markSuccess records a success. When due, it reads the clock first, so
// that the success lands in the bucket of its time; it judges after, with
// the success counted, when due or while calls are being dropped. A
// cohort that no longer counts, or a slow-call threshold, takes it to
// markOther.
func (c *cohort) markSuccess() {
	if c.state.Load() != cohortOut || c.timed {
		c.markOther(true, "")
		return
	}
	b := c.b
	if !due(c.successes.Load() + 1) {
		c.successes.Add(1)
		if c.state.Load() == cohortRetired {
			c.recount(true)
		}
		if b.mode.Load()&modeShedding != 0 {
			b.judge()
		}
		return
	}
	b.advanceIfDue()
	c.successes.Add(1)
	if c.state.Load() == cohortRetired {
		c.recount(true)
	}
	if b.mode.Load() != 0 {
		b.judge()
	}
}

// retire marks c retired, and returns the outcomes counted on it since
// the take read them: an outcome counted before the mark is the take's,
// one counted after it sees the mark and goes to the live cohort
// (recount); the counted marks, moved by compare-and-swap on both sides,
// give each to one of them.
func (c *cohort) retire() evidence.Bucket {
	c.state.Store(cohortRetired)
	var got evidence.Bucket
	for _, x := range []struct {
		outcomes, counted *atomic.Int64
		into              *int64
	}{{&c.successes, &c.countedSuccesses, &got.Successes}, {&c.failures, &c.countedFailures, &got.Failures}} {
		for {
			n, now := x.counted.Load(), x.outcomes.Load()
			if now <= n || x.counted.CompareAndSwap(n, now) {
				*x.into += max(now-n, 0)
				break
			}
		}
	}
	return got
}

// recount moves an outcome just counted on c, which a bucket's end
// retired between the check of its state and the count, to the stripe's
// live cohort, unless the take that retired c counted it: else no bucket
// would ever hold it. Callers check that c is retired. The take stores what it counted before it retires c, so
// an outcome it did not see is one more than that.
func (c *cohort) recount(ok bool) {
	outcomes, counted := &c.successes, &c.countedSuccesses
	if !ok {
		outcomes, counted = &c.failures, &c.countedFailures
	}
	for {
		n := counted.Load()
		if outcomes.Load() <= n {
			return // the take counted it
		}
		if counted.CompareAndSwap(n, n+1) {
			break
		}
	}
	live := c.s.admitted()
	if ok {
		live.successes.Add(1)
	} else {
		live.failures.Add(1)
	}
}

// countSuccess counts a success on c, the clock read, for markOther.
func (c *cohort) countSuccess() {
	c.successes.Add(1)
	if c.state.Load() == cohortRetired {
		c.recount(true)
	}
	if c.b.mode.Load() != 0 {
		c.b.judge()
	}
}

// markFailure records a failure: it always reads the clock, and judges.
func (c *cohort) markFailure(reason string) {
	if c.state.Load() != cohortOut {
		c.markOther(false, reason)
		return
	}
	c.failure(reason)
}

// failure counts a failure on c.
func (c *cohort) failure(reason string) {
	c.b.advanceIfDue()
	c.countFailure(reason)
}

// countFailure counts a failure on c, the clock read.
func (c *cohort) countFailure(reason string) {
	b := c.b
	c.failures.Add(1)
	if c.state.Load() == cohortRetired {
		c.recount(false)
	}
	b.reasons.add(b.wallNow(), reason)
	b.setMode(modeFailing)
	b.judge()
}

// markOther records an outcome that the common path does not: on an
// overdue cohort (counted already; a success teaches how long calls take
// now), on a retired one (counted on the stripe's live cohort), or under
// a slow-call threshold (a success that took longer is a failure).
func (c *cohort) markOther(ok bool, reason string) {
	b := c.b
	switch c.state.Load() {
	case cohortOverdue:
		if ok {
			b.hang.late(min(b.liveBucket()-c.bucket.Load(), track(b.span)))
		}
		return
	case cohortRetired:
		live := c.s.admitted()
		if ok {
			live.markSuccess()
		} else {
			live.markFailure(reason)
		}
		return
	}
	b.advanceIfDue()
	switch {
	case !ok:
		c.countFailure(reason)
	case b.liveBucket()-c.bucket.Load() > b.hang.slow:
		c.countFailure(b.hang.slowReason)
	default:
		c.countSuccess()
	}
}

// liveBucket returns the number of the live bucket, as the last reading
// of the clock left it.
func (b *googleBreaker) liveBucket() int64 {
	return floorDiv(b.bucketEnd.Load(), b.span) - 1
}

// take empties s's share of the live bucket and returns what it held,
// next being the number of the bucket that begins: its drops, the
// outcomes its cohorts recorded since the last take, and, as failures,
// the calls that w finds overdue. The live cohort gives way to a new one
// if it admitted a call. A cohort whose calls have all come back
// retires, and teaches w how long they took; one whose calls are still
// out past w's threshold becomes overdue. Both leave the stripe's list.
// Callers hold the breaker's mu.
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
		live = fresh
	} else {
		live.bucket.Store(next)
	}
	track := track(s.counts.b.span)
	after := w.after(track)
	prev := live
	for c := live.older.Load(); c != nil; c = c.older.Load() {
		started := c.started.Load() // before the outcomes: a call that ends between is not taken for one out
		successes, failures, ignored := c.successes.Load(), c.failures.Load(), c.ignored.Load()
		got.Successes += successes - c.countedSuccesses.Load()
		got.Failures += failures - c.countedFailures.Load()
		c.countedSuccesses.Store(successes)
		c.countedFailures.Store(failures)
		out := started - successes - failures - ignored
		age := next - c.bucket.Load()
		switch {
		case out <= 0:
			// They came back after the take that last found them out:
			// by seen+1 buckets, as far as is known. After an idle spell
			// the age is the spell's, and says nothing of the calls.
			w.cameBack(c.seen+1, started)
			got = got.Plus(c.retire())
			w.retire(c)
		case after > 0 && age > after:
			c.state.Store(cohortOverdue)
			got.Failures += out
			w.overdue += out
		case age > track:
			got = got.Plus(c.retire())
		default:
			c.seen = age
			prev = c
			continue
		}
		prev.older.Store(c.older.Load())
	}
	return got
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
