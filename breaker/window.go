package breaker

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/internal/adder"
)

// window counts a breaker's successes and failures over a rolling span of
// time split into buckets. It is built for the call path: reading the counts
// is three atomic loads, a success or a failure one add to a counter that
// spreads over processors when calls run in parallel, and buckets expire in
// one pass when the clock enters a new bucket, never on a read.
//
// The live bucket's counts sit in the two adders. When the clock enters a
// later bucket, advance moves them into the ring of finished buckets and
// drops the buckets that left the window. An outcome counts in whichever
// bucket is live when it is recorded: the one of the newest time any call
// has read, so an outcome recorded long after its call was admitted, with no
// call in between, lands in the bucket of its admission.
type window struct {
	span time.Duration // length of one bucket
	size int64         // number of buckets, the live one included

	// next is when the live bucket ends, in ns: the live bucket is number
	// next/span − 1, counting from time 0. Comparing with it spares the call
	// path a division.
	next      atomic.Int64
	completed atomic.Uint64 // finished buckets still in the window, packed by pack

	// countedDrops is the drops of the finished buckets still in the window
	// that count as requests: in each bucket, at most dropCap per admitted
	// call.
	countedDrops atomic.Uint64

	// The newest finished buckets, when they agree: upStreak is the successes
	// in the run of newest buckets that hold successes and no failure,
	// downStreak the failures in the run that holds failures and no success;
	// 0 when the newest bucket with calls breaks the run. Buckets without
	// calls neither extend nor break a run.
	upStreak   atomic.Uint64
	downStreak atomic.Uint64

	successes adder.Adder // the live bucket's successes
	failures  adder.Adder // the live bucket's failures
	drops     adder.Adder // the live bucket's drops, when the breaker counts them

	mu         sync.Mutex // serializes advance
	ring       []bucket   // guarded by mu; finished bucket e at e % size
	sumSucc    uint64     // guarded by mu; successes over ring
	sumFail    uint64     // guarded by mu; failures over ring
	sumDrop    uint64     // guarded by mu; drops over ring
	sumCounted uint64     // guarded by mu; counted drops over ring

	// Since the window was made, up to the live bucket; guarded by mu.
	cumSucc, cumFail, cumDrop uint64

	dropCap float64 // drops counted per admitted call, at most
}

// bucket is a finished bucket's counts, each saturated at maxCount.
type bucket struct{ succ, fail, drops uint32 }

// maxCount is the most a packed count holds; a bucket or a window with more
// saturates there.
const maxCount = math.MaxUint32

// pack puts successes in the high half of a word and failures in the low
// half, each saturated at maxCount.
func pack(successes, failures uint64) uint64 {
	return min(successes, maxCount)<<32 | min(failures, maxCount)
}

func unpack(v uint64) (successes, failures uint64) { return v >> 32, v & maxCount }

// newWindow returns a window of size buckets of span each, whose live bucket
// is the one holding now, that counts at most dropCap drops per admitted
// call of a bucket.
func newWindow(size int, span, now time.Duration, dropCap float64) *window {
	w := &window{span: span, size: int64(size), ring: make([]bucket, size), dropCap: dropCap}
	w.next.Store(int64(now/span+1) * int64(span))
	return w
}

// at brings the window to time now: if now lies in a later bucket than the
// live one, the buckets in between finish and the old ones expire. A now
// earlier than the live bucket (a clock stepped back) changes nothing.
//
// It reports whether this call moved the window to a new bucket.
func (w *window) at(now time.Duration) bool {
	if int64(now) >= w.next.Load() {
		return w.advance(int64(now / w.span))
	}
	return false
}

// advance makes bucket e live, and reports whether it did. While one
// goroutine advances, others carry on with the buckets as they were rather
// than wait.
func (w *window) advance(e int64) bool {
	if !w.mu.TryLock() {
		return false
	}
	defer w.mu.Unlock()
	live := w.next.Load()/int64(w.span) - 1
	if e <= live {
		return false
	}
	// Outcomes added from here on count in the new live bucket.
	done := bucket{
		succ:  uint32(min(w.successes.Take(), maxCount)),
		fail:  uint32(min(w.failures.Take(), maxCount)),
		drops: uint32(min(w.drops.Take(), maxCount)),
	}
	w.extendStreaks(done)
	w.cumSucc += uint64(done.succ)
	w.cumFail += uint64(done.fail)
	w.cumDrop += uint64(done.drops)
	if e-live >= w.size { // everything, the bucket just finished too, expired
		clear(w.ring)
		w.sumSucc, w.sumFail, w.sumDrop, w.sumCounted = 0, 0, 0, 0
		w.upStreak.Store(0)
		w.downStreak.Store(0)
	} else {
		w.ring[live%w.size] = done
		w.sumSucc += uint64(done.succ)
		w.sumFail += uint64(done.fail)
		w.sumDrop += uint64(done.drops)
		w.sumCounted += w.counted(uint64(done.succ), uint64(done.fail), uint64(done.drops))
		for i := live + 1; i <= e; i++ { // the slots reused by buckets live+1 … e held expired ones
			old := &w.ring[i%w.size]
			w.sumSucc -= uint64(old.succ)
			w.sumFail -= uint64(old.fail)
			w.sumDrop -= uint64(old.drops)
			w.sumCounted -= w.counted(uint64(old.succ), uint64(old.fail), uint64(old.drops))
			*old = bucket{}
		}
	}
	w.completed.Store(pack(w.sumSucc, w.sumFail))
	w.countedDrops.Store(w.sumCounted)
	w.next.Store((e + 1) * int64(w.span))
	return true
}

// counted returns how many of a bucket's drops count as requests: at most
// dropCap per admitted call. The same counts always give the same result,
// so a bucket subtracts on expiry what it added.
func (w *window) counted(succ, fail, drops uint64) uint64 {
	// Through int64: converting a uint64 to and from float64 takes branches.
	return min(drops, uint64(int64(w.dropCap*float64(int64(succ+fail)))))
}

// extendStreaks adds a finished bucket to the runs of agreeing buckets.
// Callers hold w.mu.
func (w *window) extendStreaks(done bucket) {
	switch {
	case done.succ > 0 && done.fail == 0:
		w.upStreak.Add(uint64(done.succ))
		w.downStreak.Store(0)
	case done.fail > 0 && done.succ == 0:
		w.downStreak.Add(uint64(done.fail))
		w.upStreak.Store(0)
	case done.succ > 0 && done.fail > 0:
		w.upStreak.Store(0)
		w.downStreak.Store(0)
	}
}

// counts is what a window holds, and has held.
type counts struct {
	successes, failures, drops                uint64 // in the window
	totalSuccesses, totalFailures, totalDrops uint64 // since the window was made
}

// snapshot returns the counts at time now.
func (w *window) snapshot(now time.Duration) counts {
	w.at(now)
	w.mu.Lock()
	defer w.mu.Unlock()
	s, f, d := w.successes.Load(), w.failures.Load(), w.drops.Load()
	return counts{
		successes: w.sumSucc + s, failures: w.sumFail + f, drops: w.sumDrop + d,
		totalSuccesses: w.cumSucc + s, totalFailures: w.cumFail + f, totalDrops: w.cumDrop + d,
	}
}
