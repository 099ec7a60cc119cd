package breaker

import (
	"math"
	"sync/atomic"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

// streaks follows the newest finished buckets of the outcomes window while
// they agree: up is the successes in the run of newest buckets that held
// successes and no failure, down the failures in the run that held
// failures and no success; both 0 once a bucket held both. Buckets without
// outcomes neither extend nor break a run's counts.
//
// downBuckets is how many buckets the down run spans, from its first
// failing bucket to its newest, both counted, with the buckets between
// them, whatever they held (a dependency whose failing calls are few and
// far between, or shed, has been down all along). recovering is set while
// the up run follows a down run that spanned a window.
//
// It also keeps the newest finished bucket's outcomes and drops, whatever
// they held, for the formula's judgement of the newest buckets alone.
//
// A bucket is idle when it held no outcome and no drop: nobody called.
// Once the window's finished buckets are all idle (size−1 of them in a
// row), the window says nothing about the dependency any more, and every
// run ends. A bucket whose calls were all dropped is not idle: the breaker
// shed them on the runs' evidence, which it must not forget for that.
//
// The outcomes window reports a finished bucket with the buckets that came
// and went empty after it, each time it moves, and how often it moves
// depends on how often it is read: on each call, and by Stats, an
// exporter's poll or a fleet's publishing between calls. bucketDone takes
// a report as that bucket followed by that many empty ones, one at a time,
// so that the runs, and the decisions read from them, are the same however
// the buckets were reported.
type streaks struct {
	size     int64 // buckets in the window
	up, down atomic.Int64
	// downBuckets is how many buckets the down run spans; recovering is
	// set while the up run follows a down run that spanned a window.
	downBuckets atomic.Int64
	recovering  atomic.Bool

	// dropped is set by a drop, and taken when the outcomes window's
	// current bucket finishes: that bucket held a drop. A drop is decided
	// on the outcomes window read at its instant, so it falls in the bucket
	// current then; one racing with the window's move may mark the next
	// bucket instead.
	dropped atomic.Bool
	// quiet is how many of the newest finished buckets, in a row, held no
	// outcome, and idle how many held neither an outcome nor a drop.
	// Guarded by the outcomes window's lock.
	quiet, idle int64

	// newest is the newest finished bucket's successes and failures,
	// packed (see packNewest); 0 once an empty bucket followed it.
	newest atomic.Uint64
	// newestDrops is the drops window's newest finished bucket's drops.
	newestDrops atomic.Int64
}

// packNewest packs a bucket's successes and failures into one word, 32
// bits each, halving both while either is too large: a reader reads the
// two at once, in their proportion.
func packNewest(successes, failures int64) uint64 {
	for successes > math.MaxUint32 || failures > math.MaxUint32 {
		successes, failures = (successes+1)/2, (failures+1)/2
	}
	return uint64(successes) | uint64(failures)<<32
}

// newestBucket returns the newest finished bucket's successes and
// failures, with the current bucket's (succ and fail) added.
func (s *streaks) newestBucket(succ, fail int64) (successes, failures int64) {
	n := s.newest.Load()
	return int64(n&math.MaxUint32) + succ, int64(n>>32) + fail
}

// sawDrop records that a call was dropped in the outcomes window's current
// bucket. It writes only the first time in a bucket.
func (s *streaks) sawDrop() {
	if !s.dropped.Load() {
		s.dropped.Store(true)
	}
}

// bucketDone takes in a finished bucket of the outcomes window, passed
// buckets after which came and went empty. The outcomes window calls it
// under its lock.
func (s *streaks) bucketDone(done rollingwindow.Bucket[int64], passed int64) {
	s.finish(done, s.dropped.Swap(false))
	s.pass(passed)
	if passed > 0 {
		s.newest.Store(0)
	} else {
		s.newest.Store(packNewest(done.Sum, done.Count-done.Sum))
	}
}

// finish takes in one finished bucket: done, and a drop if dropped.
func (s *streaks) finish(done rollingwindow.Bucket[int64], dropped bool) {
	if done.Count == 0 {
		if !dropped {
			s.pass(1)
			return
		}
		s.quiet++
		s.idle = 0
		return
	}
	quiet := s.quiet
	s.quiet, s.idle = 0, 0
	succ, fail := done.Sum, done.Count-done.Sum
	switch {
	case fail == 0:
		if s.downBuckets.Load() >= s.size {
			s.recovering.Store(true)
		} else if s.up.Load() == 0 {
			s.recovering.Store(false)
		}
		s.up.Add(succ)
		s.down.Store(0)
		s.downBuckets.Store(0)
	case succ == 0:
		if s.down.Load() > 0 { // the run goes on: the quiet buckets are part of it
			s.downBuckets.Add(quiet + 1)
		} else {
			s.downBuckets.Store(1)
		}
		s.down.Add(fail)
		s.up.Store(0)
		s.recovering.Store(false)
	default:
		s.reset()
	}
}

// pass takes in n idle buckets.
func (s *streaks) pass(n int64) {
	s.quiet += n
	s.idle += n
	if n > 0 && s.idle >= s.size-1 { // the window's finished buckets are all idle
		s.reset()
	}
}

// reset ends every run.
func (s *streaks) reset() {
	s.up.Store(0)
	s.down.Store(0)
	s.downBuckets.Store(0)
	s.recovering.Store(false)
}

// recent returns the successes and failures of the newest run of agreeing
// finished buckets and the current one (which holds succ and fail so far),
// while the current bucket agrees with the run; (0, 0) when there is no
// run, or the current bucket breaks it. A run needs a finished bucket: a
// bucket that has just begun says too little on its own.
func (s *streaks) recent(succ, fail int64) (successes, failures int64) {
	if down := s.down.Load(); down > 0 && succ == 0 {
		return 0, down + fail
	}
	if up := s.up.Load(); up > 0 && fail == 0 {
		return up + succ, 0
	}
	return 0, 0
}
