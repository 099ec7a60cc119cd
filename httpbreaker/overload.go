package httpbreaker

import (
	"sync"
	"sync/atomic"
)

// RetryHeader is the response header in which a [Handler] whose breaker is
// shedding gives its advice on retrying: "no" when most of what it sheds is
// already a retry (the overload is wide, not local: a retry would only add
// to it), "later" otherwise, with a Retry-After. The Handler sets it on the
// requests it sheds (503 Service Unavailable) and on the failures (5xx) of
// the requests it serves while it sheds.
//
// A [Transport] with the default [ClientClassifier] records a failure that
// carries the header as neither a success nor a failure: the server's
// breaker is already throttling the dependency that failed, and a client
// breaker that counted its sheds as failures would shed too, each breaker
// then starving the other of the evidence it needs to readmit the
// dependency once it heals (docs/http.md, "Client and server breakers").
const RetryHeader = "Srebreaker-Retry"

// The values of RetryHeader.
const (
	retryNo    = "no"
	retryLater = "later"
)

// overload is what a Handler remembers of the requests it saw, for its
// advice on retrying: a histogram of their attempt numbers (first attempts
// and retries), of those it saw and of those it shed, over the newest few
// hundred requests; and how many requests it has served since it last
// shed one. Its counts are approximate under concurrency, which the advice
// tolerates. Safe for concurrent use.
type overload struct {
	seen, shed [2]atomic.Int64 // [0] first attempts, [1] retries
	halving    atomic.Bool
	sinceShed  atomic.Int64 // 0 while not shedding; else 1 + the requests served since the last shed one
	shedRun    atomic.Int64 // requests the breaker dropped since it last admitted one
	downRun    atomic.Int64 // requests served that failed in a row, the newest last
	healed     atomic.Bool  // a probe succeeded after downFailures, and nothing failed since
	refusing   atomic.Bool  // the advice is "no" until the breaker stops shedding
}

const (
	// overloadMemory is how many requests the histogram holds at most:
	// when it holds more, every count is halved, so that it follows the
	// newest requests, about a window's worth at a few hundred requests
	// a second.
	overloadMemory = 512
	// overloadMinSheds is how many sheds the histogram must hold before
	// the Handler says "don't retry": one shed retry says little.
	overloadMinSheds = 8
	// sheddingSpan is how many requests in a row a Handler serves after it
	// last shed one before it stops marking failures with its advice.
	sheddingSpan = 64
	// probeEvery is how many requests in a row the breaker must drop for
	// the next one it drops to be served all the same, as a probe.
	probeEvery = 32
	// downFailures is how many requests served in a row must have failed,
	// and none succeeded since, for the dependency to look down: only then
	// does the Handler probe it. A dependency that serves some requests
	// (an overload, or shedding by criticality) is left to the breaker.
	downFailures = 3
)

// kind is the histogram's index of a request with the given attempt
// number.
func kind(attempt int) int {
	if attempt > 1 {
		return 1
	}
	return 0
}

// probe notes a request the breaker dropped and reports whether it is to
// be served all the same, as a probe: while the dependency looks down, the
// probeEvery-th in a row; after a probe succeeded, every one until a
// request fails.
func (o *overload) probe() bool {
	n := o.shedRun.Add(1)
	return o.healed.Load() || n%probeEvery == 0 && o.downRun.Load() >= downFailures
}

// outcome notes how a request the Handler served ended, probe or not.
func (o *overload) outcome(x Outcome, probe bool) {
	switch x {
	case Success:
		if probe && !o.healed.Load() && o.downRun.Load() >= downFailures {
			o.healed.Store(true)
		}
		if o.downRun.Load() != 0 {
			o.downRun.Store(0)
		}
	case Ignore:
	default:
		o.downRun.Add(1)
		if o.healed.Load() {
			o.healed.Store(false)
		}
	}
}

// probe is the promise of a request served as a probe although the breaker
// dropped it: the breaker counted it as a drop, and its outcome is noted
// only in the Handler's memory (see overload.outcome).
type probe struct{}

func (probe) Accept()       {}
func (probe) Reject(string) {}
func (probe) Ignore()       {}

// served notes a request the breaker admitted and returns the advice the
// Handler gives with its failure, or "" when its breaker is not shedding.
func (o *overload) served(attempt int) string {
	o.note(kind(attempt))
	if o.shedRun.Load() != 0 {
		o.shedRun.Store(0)
	}
	if o.sinceShed.Load() == 0 {
		return "" // not shedding
	}
	if o.sinceShed.Add(1) <= sheddingSpan+1 {
		return o.advice()
	}
	o.sinceShed.Store(0) // sheddingSpan served in a row: the breaker has stopped shedding
	if o.refusing.Load() {
		o.refusing.Store(false)
	}
	return ""
}

// shedding notes a request the breaker shed and returns the advice the
// Handler answers it with.
func (o *overload) shedding(attempt int) string {
	k := kind(attempt)
	o.shed[k].Add(1)
	o.note(k)
	if o.sinceShed.Load() != 1 {
		o.sinceShed.Store(1)
	}
	return o.advice()
}

// advice is "no" once most of the sheds the histogram holds, and at least
// overloadMinSheds of them, were retries, and then until the breaker stops
// shedding (sheddingSpan admitted in a row): callers that heed it stop
// retrying, so that the histogram soon holds first attempts only, while
// the overload that made them retry goes on. "later" otherwise.
func (o *overload) advice() string {
	if o.refusing.Load() {
		return retryNo
	}
	first, retries := o.shed[0].Load(), o.shed[1].Load()
	if first+retries >= overloadMinSheds && retries > first {
		o.refusing.Store(true)
		return retryNo
	}
	return retryLater
}

// note counts a request of kind k seen, and halves every count when the
// histogram holds more than overloadMemory requests.
func (o *overload) note(k int) {
	if o.seen[k].Add(1)+o.seen[1-k].Load() <= overloadMemory || !o.halving.CompareAndSwap(false, true) {
		return
	}
	for i := range 2 {
		o.seen[i].Add(-o.seen[i].Load() / 2)
		o.shed[i].Add(-o.shed[i].Load() / 2)
	}
	o.halving.Store(false)
}

// memories holds an overload per breaker key, so that the keys of one
// Handler or interceptor (routes, methods) are judged apart: the first
// key's in a field of its own, the common case of one key; the others in a
// map, up to maxMemories of them, past which keys share one memory, so
// that keys clients choose cannot grow it without bound.
type memories struct {
	first  atomic.Pointer[keyed]
	others sync.Map // key → *overload
	n      atomic.Int64
	shared overload
}

// keyed is the overload of one key.
type keyed struct {
	key string
	o   overload
}

// maxMemories is how many keys get an overload of their own.
const maxMemories = 1024

// of returns the overload of key.
func (ms *memories) of(key string) *overload {
	f := ms.first.Load()
	if f == nil {
		if ms.first.CompareAndSwap(nil, &keyed{key: key}) {
			return &ms.first.Load().o
		}
		f = ms.first.Load()
	}
	if f.key == key {
		return &f.o
	}
	if v, ok := ms.others.Load(key); ok {
		return v.(*overload)
	}
	if ms.n.Load() >= maxMemories {
		return &ms.shared
	}
	v, loaded := ms.others.LoadOrStore(key, new(overload))
	if !loaded {
		ms.n.Add(1)
	}
	return v.(*overload)
}
