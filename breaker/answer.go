package breaker

import "github.com/srebreaker/srebreaker"

// Answered marks the call of p as answered: the dependency has begun to
// answer it (a stream's header or first message, a response's first
// flush), so the breaker follows it no more as a call in flight, which
// would count against the dependency once out for much longer than its
// calls take (see [WithSlowCall]), but its outcome is still to come. It
// returns the promise to record that outcome on, exactly once, instead of
// on p: a stream that answers and then fails is a failure, one whose
// caller gives up is neither ([srebreaker.Ignore]), however long it
// lasted.
//
// The time to the answer is what the breaker times: it learns from it how
// long the dependency's calls take, and a call still out for much longer
// than that, or than [WithSlowCall]'s threshold, before it answers counts
// as a failure then, as any call out does; its answer and outcome count
// no more (the promise returned records nothing), since an outcome is
// evidence about the moment the call was made.
//
// Answered is a method of the promises of this package's breakers, not of
// [srebreaker.Promise]; an integration finds it with a type assertion:
//
//	if a, ok := p.(interface{ Answered() srebreaker.Promise }); ok {
//		p = a.Answered()
//	}
//
// It is called at most once, before the outcome. It is safe to call
// concurrently with the breaker's other calls, and the promise it returns
// is safe for concurrent use.
func (p promise) Answered() srebreaker.Promise {
	c := p.c
	if c.timed {
		c.s.readClock() // a call out past the threshold is found overdue first
	}
	c.others.Add(1) // not a success: see cohort.others
	if c.ended.Add(1)&overdueBit != 0 {
		c.lateSuccess() // counted as a failure when its cohort became overdue
		return nopPromise{}
	}
	return answer{c}
}

// answer is the promise of a call that answered: its outcome counts in
// the live bucket when it comes, on the stripe of the call's cohort. Only
// the cohort's breaker and stripe are read, which a cohort keeps when it
// is reused.
type answer struct{ c *cohort }

func (a answer) Accept() {
	b := a.c.b
	a.c.s.readClock()
	a.c.s.lane.Add(1)
	if b.mode.Load() != 0 {
		b.judge()
	}
}

func (a answer) Reject(reason string) {
	a.c.s.readClock()
	a.c.countFailure(reason)
}

// RejectOverloaded records a failure as Reject does, the dependency
// marked overloaded first (see [srebreaker.OverloadRejecter]).
func (a answer) RejectOverloaded(reason string) {
	b := a.c.b
	a.c.s.readClock()
	b.markOverloaded()
	a.c.countFailure(reason)
}

// Ignore records nothing: the call is no longer out since it answered.
func (answer) Ignore() {}

var (
	_ srebreaker.Ignorer          = answer{}
	_ srebreaker.OverloadRejecter = answer{}
)
