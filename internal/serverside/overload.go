package serverside

import "sync/atomic"

// The advice a shedding server gives on retrying a call.
const (
	// RetryNo says "don't retry": most of what the server sheds is
	// already a retry, so the overload is wide, not local, and a retry
	// would only add to it.
	RetryNo = "no"
	// RetryLater says "retry later".
	RetryLater = "later"
)

// Outcome is how a call a server served ended, as its transport's
// classifier recorded it on the breaker.
type Outcome int8

// The outcomes.
const (
	Success Outcome = iota
	Failure
	Ignore // neither: the call says nothing about the dependency
)

// Overload is what a server remembers of the calls of one breaker key: a
// histogram of their attempt numbers (first attempts and retries), of
// those it saw and of those it shed, over the newest few hundred calls,
// for its advice on retrying; how many calls it has served since it last
// shed one; and how the calls it served ended, to probe a dependency that
// looks down (see [Overload.Probe]). Its counts are approximate under
// concurrency, which its uses tolerate. The zero value is ready to use.
type Overload struct {
	seen, shed [2]atomic.Int64 // [0] first attempts, [1] retries
	halving    atomic.Bool
	sinceShed  atomic.Int64 // 0 while not shedding; else 1 + the calls served since the last shed one
	refusing   atomic.Bool  // the advice is "no" until the breaker stops shedding
	probes     prober
	limiter    atomic.Pointer[Limiter] // the key's overload limit, made on first use
	tied       atomic.Pointer[tie]     // the breaker its figures were last given to
}

const (
	// overloadMemory is how many calls the histogram holds at most: when
	// it holds more, every count is halved, so that it follows the newest
	// calls, about a window's worth at a few hundred calls a second.
	overloadMemory = 512
	// overloadMinSheds is how many sheds the histogram must hold before
	// the server says "don't retry": one shed retry says little.
	overloadMinSheds = 8
	// sheddingSpan is how many calls in a row a server serves after it
	// last shed one before it stops marking failures with its advice.
	sheddingSpan = 64
)

// kind is the histogram's index of a call with the given attempt number.
func kind(attempt int) int {
	if attempt > 1 {
		return 1
	}
	return 0
}

// Served notes a call the breaker admitted, attempt its 1-based attempt
// number, and returns the advice the server gives with its failure, or ""
// when the breaker is not shedding.
func (o *Overload) Served(attempt int) string {
	o.note(kind(attempt))
	o.probes.admitted()
	if o.sinceShed.Load() == 0 {
		return "" // not shedding
	}
	if o.sinceShed.Add(1) <= sheddingSpan+1 {
		return o.Advice()
	}
	o.sinceShed.Store(0) // sheddingSpan served in a row: the breaker has stopped shedding
	if o.refusing.Load() {
		o.refusing.Store(false)
	}
	return ""
}

// Shedding notes a call the breaker shed, attempt its 1-based attempt
// number, and returns the advice the server answers it with.
func (o *Overload) Shedding(attempt int) string {
	k := kind(attempt)
	o.shed[k].Add(1)
	o.note(k)
	if o.sinceShed.Load() != 1 {
		o.sinceShed.Store(1)
	}
	return o.Advice()
}

// Advice is [RetryNo] once most of the sheds the histogram holds, and at
// least overloadMinSheds of them, were retries, and then until the breaker
// stops shedding ([sheddingSpan] admitted in a row): callers that heed it
// stop retrying, so that the histogram soon holds first attempts only,
// while the overload that made them retry goes on. [RetryLater]
// otherwise.
func (o *Overload) Advice() string {
	if o.refusing.Load() {
		return RetryNo
	}
	first, retries := o.shed[0].Load(), o.shed[1].Load()
	if first+retries >= overloadMinSheds && retries > first {
		o.refusing.Store(true)
		return RetryNo
	}
	return RetryLater
}

// note counts a call of kind k seen, and halves every count when the
// histogram holds more than overloadMemory calls.
func (o *Overload) note(k int) {
	if o.seen[k].Add(1)+o.seen[1-k].Load() <= overloadMemory || !o.halving.CompareAndSwap(false, true) {
		return
	}
	for i := range 2 {
		o.seen[i].Add(-o.seen[i].Load() / 2)
		o.shed[i].Add(-o.shed[i].Load() / 2)
	}
	o.halving.Store(false)
}
