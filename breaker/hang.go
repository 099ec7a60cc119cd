package breaker

import (
	"fmt"
	"sync/atomic"
	"time"
)

// hangWatch decides when a call that has not come back counts against the
// dependency. A dependency that stops answering gives a breaker that
// counts only finished calls no evidence until the callers' timeouts: the
// SRE book counts a request when it is attempted and an accept when the
// backend accepts it, and a request that never comes back is never
// accepted. So, when a bucket finishes, the calls of a cohort (the calls a
// stripe admitted in one bucket) that are still out more than after()
// buckets after it are counted as failures, in the bucket that finishes,
// and their outcomes, when they come, count no more: an outcome is
// evidence about the moment the call was made, and a call made during a
// hang that times out after the dependency healed does not hold it shut.
//
// after() is the slow-call threshold when [WithSlowCall] sets one.
// Otherwise, while the dependency is hanging (calls were found overdue and
// no cohort has come back since), it is the normal and a bucket more: a
// call let through to see whether the dependency answers again need not
// be out four times longer than normal to say it does not.
//
// While the dependency is hanging, the calls out that are not yet overdue
// count as failures in the live bucket (stripe.live), until they come back
// or a cohort does: a call let through to see whether it answers again is
// presumed not to until it does, so that one is let through at a time
// rather than all the calls made until the first becomes overdue. The
// breaker then also judges on every call it admits.
// Otherwise it is learned from the dependency's own calls: hangFactor
// times the longest a cohort's calls took to come back (in buckets) over
// the last normalPeriods periods of periodCohorts cohorts each, once
// learnCalls calls have come back; until then, and with
// [WithPlainFormula], no call counts before it comes back. Periods count
// cohorts, not time: a dependency that stops answering, whose cohorts no
// longer come back, keeps the normal it had. A success that comes back
// after its cohort became overdue teaches the normal too, so that a
// dependency that has become slower, and answers, is taken at its new
// pace after a few such calls.
type hangWatch struct {
	// slow is WithSlowCall's threshold in buckets (floor), 0 to learn it:
	// a call that comes back after more buckets than slow is a failure.
	slow       int64
	slowReason string // the failure reason of a call that took too long
	off        bool   // WithPlainFormula: every call counts when it comes back
	// lateAge is the longest return of an overdue success since the last
	// take, in buckets.
	lateAge atomic.Int64
	// normal is what the calls that came back taught; nil until one did,
	// so that a breaker never called keeps no room for it. Guarded by the
	// breaker's mu.
	normal *learnedNormal
	// overdue and back are what the take under way found: the calls found
	// overdue, and whether a cohort came back. Guarded by the breaker's mu.
	overdue int64
	back    bool
	// hanging is set when a take found calls overdue, until one finds a
	// cohort that came back, and none overdue. Written under the
	// breaker's mu.
	hanging atomic.Bool
}

// learnedNormal is the longest the dependency's calls took to come back
// lately.
type learnedNormal struct {
	ages    [normalPeriods]int64 // the longest return, in buckets, of each period
	period  int64                // the period ages[period%normalPeriods] holds
	cohorts int64                // cohorts that came back in the period
	calls   int64                // calls that came back, up to learnCalls

	// retiring holds the cohorts whose calls all came back in the take
	// under way, spare those that did a take or more before: a bucket
	// after a cohort gave way, no call can still be joining it, and a
	// new cohort is made of a spare one rather than allocated.
	retiring, spare []*cohort
}

// maxSpare is how many spare cohorts a breaker keeps at most.
const maxSpare = 16

// The learned normal's constants, measured in docs/design/behaviour.md ("Hangs
// and slowdowns").
const (
	// hangFactor is how many times the normal a call is out before it
	// counts against the dependency: the normal is a maximum, so a
	// healthy tail a few times longer than most cohorts' rarely reaches it.
	hangFactor = 4
	// learnCalls is how many calls must have come back before the normal
	// is trusted.
	learnCalls = 40
	// normalPeriods and periodCohorts: the normal is the longest return
	// over the newest normalPeriods·periodCohorts cohorts or so (about 25 s
	// of one busy stripe at the default window).
	normalPeriods = 8
	periodCohorts = 32
	// maxSlowCall bounds WithSlowCall, and how long a call out is followed.
	maxSlowCall = 2 * time.Minute
)

// track is how many buckets of span a cohort with calls out is followed
// for at most: maxSlowCall. A cohort older than that, not overdue, is
// forgotten: its calls count when they come back.
func track(span int64) int64 { return (int64(maxSlowCall) + span - 1) / span }

// init sets w up for a breaker whose buckets span span; slow is
// WithSlowCall's threshold, 0 for none.
func (w *hangWatch) init(span time.Duration, slow time.Duration, plain bool) {
	w.off = plain
	if slow > 0 {
		w.slow = max(int64(slow/span), 1)
		w.slowReason = fmt.Sprintf("slow call: longer than %v", slow)
	}
}

// after returns how many buckets a call may be out before it counts
// against the dependency, track the most; 0 when none counts before it
// comes back.
func (w *hangWatch) after(track int64) int64 {
	n := w.normal
	switch {
	case w.off:
		return 0
	case w.slow > 0:
		return w.slow
	case n == nil || n.calls < learnCalls:
		return 0
	case w.hanging.Load():
		return min(n.longest()+1, track)
	}
	return min(hangFactor*n.longest(), track)
}

// begin starts a take.
func (w *hangWatch) begin() { w.overdue, w.back = 0, false }

// end ends a take: the late successes noted join the normal, the calls
// found overdue set hanging, a cohort that came back without any clears
// it.
func (w *hangWatch) end() {
	if age := w.lateAge.Swap(0); age > 0 {
		w.cameBack(age, 1)
	}
	if n := w.normal; n != nil {
		n.spare = append(n.spare, n.retiring...)
		clear(n.retiring)
		n.retiring = n.retiring[:0]
	}
	switch {
	case w.overdue > 0:
		w.hanging.Store(true)
	case w.back:
		w.hanging.Store(false)
	}
}

// longest returns the longest a cohort took to come back, in buckets,
// over the periods remembered.
func (n *learnedNormal) longest() int64 {
	l := int64(1)
	for _, a := range n.ages {
		l = max(l, a)
	}
	return l
}

// cameBack takes in a cohort of calls calls that all came back within age
// buckets of the bucket they were made in.
func (w *hangWatch) cameBack(age, calls int64) {
	if calls <= 0 {
		return
	}
	w.back = true
	n := w.normal
	if n == nil {
		n = new(learnedNormal)
		w.normal = n
	}
	i := n.period % normalPeriods
	n.ages[i] = max(n.ages[i], age)
	n.calls = min(n.calls+calls, learnCalls)
	if n.cohorts++; n.cohorts >= periodCohorts {
		n.period++
		n.ages[n.period%normalPeriods] = 0
		n.cohorts = 0
	}
}

// retire takes in a cohort whose calls all came back, to be made anew
// (reuse) a take later.
func (w *hangWatch) retire(c *cohort) {
	if n := w.normal; n != nil && len(n.retiring)+len(n.spare) < maxSpare {
		n.retiring = append(n.retiring, c)
	}
}

// reuse returns an empty cohort of s for calls made in bucket next: a
// spare one of s when there is one, else a new one. Retired a take ago or
// more, and emptied here, a spare cohort no call counts on any more: the
// calls that joined it all came back. A call that joined it so late that
// its outcome comes now counts in the bucket next, a bucket or more from
// its own.
func (w *hangWatch) reuse(s *stripe, next int64) *cohort {
	n := w.normal
	if n == nil {
		return newCohort(s, next)
	}
	for i, c := range n.spare {
		if c.s != s {
			continue
		}
		n.spare = append(n.spare[:i], n.spare[i+1:]...)
		c.started.Store(0)
		c.ended.Store(0)
		c.others.Store(0)
		c.read.Store(0)
		c.bucket.Store(next)
		c.older.Store(nil)
		c.seen = 0
		c.state.Store(cohortOut)
		return c
	}
	return newCohort(s, next)
}

// late notes a success that came back age buckets after the bucket it was
// made in, after its cohort became overdue. Safe for concurrent use.
func (w *hangWatch) late(age int64) {
	for {
		old := w.lateAge.Load()
		if age <= old || w.lateAge.CompareAndSwap(old, age) {
			return
		}
	}
}

// overdueReason returns the failure reason of calls found out for more
// than after buckets of span.
func overdueReason(after int64, span time.Duration) string {
	return fmt.Sprintf("no answer within %v", time.Duration(after)*span)
}
