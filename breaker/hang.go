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
// be out four times longer than normal to say it does not, and the calls
// let through meanwhile are fewer.
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
//
// The fields but slow, slowReason, track and lateAge are guarded by the
// breaker's mu.
type hangWatch struct {
	// slow is WithSlowCall's threshold in buckets (floor), 0 to learn it:
	// a call that comes back after more buckets than slow is a failure.
	slow       int64
	slowReason string // the failure reason of a call that took too long
	off        bool   // WithPlainFormula: every call counts when it comes back
	// track is how many buckets a cohort with calls out is followed for
	// at most: maxSlowCall. A cohort older than that, not overdue, is
	// forgotten: its calls count when they come back.
	track int64
	span  time.Duration

	ages    [normalPeriods]int64 // the longest return, in buckets, of each period
	period  int64                // the period ages[period%normalPeriods] holds
	cohorts int64                // cohorts that came back in the period
	calls   int64                // calls that came back, up to learnCalls
	overdue int64                // calls found overdue by the take under way
	back    bool                 // a cohort came back in the take under way
	// hanging is set when a take found calls overdue, until one finds a
	// cohort that came back, and none overdue.
	hanging bool
	lateAge atomic.Int64 // the longest return of an overdue success since the last take
}

// The learned normal's constants, measured in docs/behaviour.md ("Hangs
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

// init sets w up for a breaker whose buckets span span; slow is
// WithSlowCall's threshold, 0 for none.
func (w *hangWatch) init(span time.Duration, slow time.Duration, plain bool) {
	w.span, w.off = span, plain
	w.track = int64((maxSlowCall + span - 1) / span)
	if slow > 0 {
		w.slow = max(int64(slow/span), 1)
		w.slowReason = fmt.Sprintf("slow call: longer than %v", slow)
	}
}

// after returns how many buckets a call may be out before it counts
// against the dependency; 0 when none counts before it comes back.
func (w *hangWatch) after() int64 {
	switch {
	case w.off:
		return 0
	case w.slow > 0:
		return w.slow
	case w.calls < learnCalls:
		return 0
	case w.hanging:
		return min(w.normal()+1, w.track)
	}
	return min(hangFactor*w.normal(), w.track)
}

// begin starts a take.
func (w *hangWatch) begin() { w.overdue, w.back = 0, false }

// end ends a take: the calls found overdue set hanging, a cohort that came
// back without any clears it.
func (w *hangWatch) end() {
	w.foldLate()
	switch {
	case w.overdue > 0:
		w.hanging = true
	case w.back:
		w.hanging = false
	}
}

// normal returns the longest a cohort took to come back, in buckets, over
// the periods remembered.
func (w *hangWatch) normal() int64 {
	n := int64(1)
	for _, a := range w.ages {
		n = max(n, a)
	}
	return n
}

// cameBack takes in a cohort of calls calls that all came back within age
// buckets of the bucket they were made in.
func (w *hangWatch) cameBack(age, calls int64) {
	if calls <= 0 {
		return
	}
	w.back = true
	i := w.period % normalPeriods
	w.ages[i] = max(w.ages[i], age)
	w.calls = min(w.calls+calls, learnCalls)
	if w.cohorts++; w.cohorts >= periodCohorts {
		w.period++
		w.ages[w.period%normalPeriods] = 0
		w.cohorts = 0
	}
}

// late notes a success that came back age buckets after the bucket it was
// made in, after its cohort became overdue. Safe for concurrent use.
func (w *hangWatch) late(age int64) {
	age = min(age, w.track)
	for {
		old := w.lateAge.Load()
		if age <= old || w.lateAge.CompareAndSwap(old, age) {
			return
		}
	}
}

// foldLate takes the late successes noted since the last take into the
// normal.
func (w *hangWatch) foldLate() {
	if age := w.lateAge.Swap(0); age > 0 {
		w.cameBack(age, 1)
	}
}

// overdueReason returns the failure reason of calls found out for more
// than after buckets.
func (w *hangWatch) overdueReason(after int64) string {
	return fmt.Sprintf("no answer within %v", time.Duration(after)*w.span)
}
