package breaker

import (
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

// reach keeps the outcomes of the calls admitted over a longer span than
// the window, the horizon, so that on light traffic the formula can read
// back until it holds enough calls to mean something (see [WithEvidence]).
// It keeps them in blocks of a few of the window's buckets: near blocks, a
// quarter of the window each, over the newest two windows or so, and far
// blocks, a window each (m near blocks), back to the horizon; each
// finished bucket goes into both its near and its far block, and a reader
// reads near blocks back to a far block's start, then far blocks. The
// outcomes window reports each finished bucket to it (bucketDone, under
// the window's lock); readers read the blocks' counts without a lock.
type reach struct {
	per int64 // the window's buckets per near block
	m   int64 // near blocks per far block
	// span is the horizon in near blocks: a reader reads back to the near
	// block span−1 before the current one, rounded to a far block.
	span int64
	// next is the number of the window's current bucket, counted from the
	// breaker's start: the next bucket to finish. Written under the
	// window's lock.
	next atomic.Int64
	// nextDrop is next for the drops window, whose buckets are numbered
	// alike (both windows count from the breaker's start; after a window
	// starts afresh, as when the clock steps back, the two may be a few
	// buckets apart, which moves some drops to a neighbouring block).
	// Written under that window's lock.
	nextDrop atomic.Int64
	// near holds near block n at n mod len(near), far holds far block n
	// at n mod len(far); both slices share one allocation. far is empty
	// when the horizon is within the near blocks.
	near, far []reachBlock
}

// reachBlock holds the outcomes of the finished buckets of one block: a
// near block num holds the buckets numbered from num·per to
// num·per + per − 1, a far block m times as many.
type reachBlock struct {
	num    atomic.Int64  // the block it holds; −1 for none
	counts atomic.Uint64 // successes, failures and drops, packed (see pack)
}

// A block's counts share one word, so that a reader reads the three at
// once: successes in the low 22 bits, failures and drops in 21 bits each.
// A block that would count more halves all three first, keeping their
// proportions: it has far more calls than any evidence asks for then.
const (
	reachFailShift = 22
	reachDropShift = 43
	reachMaxSucc   = 1<<reachFailShift - 1
	reachMaxOther  = 1<<(reachDropShift-reachFailShift) - 1
)

// pack packs a block's counts, each within its bits.
func pack(successes, failures, drops int64) uint64 {
	return uint64(successes) | uint64(failures)<<reachFailShift | uint64(drops)<<reachDropShift
}

// unpack is the inverse of pack.
func unpack(c uint64) (successes, failures, drops int64) {
	return int64(c & reachMaxSucc), int64(c >> reachFailShift & reachMaxOther), int64(c >> reachDropShift)
}

// add adds to the block's counts, halving them while any is too large.
func (blk *reachBlock) add(successes, failures, drops int64) {
	for {
		old := blk.counts.Load()
		s, f, d := unpack(old)
		s, f, d = s+successes, f+failures, d+drops
		for s > reachMaxSucc || f > reachMaxOther || d > reachMaxOther {
			s, f, d = (s+1)/2, (f+1)/2, (d+1)/2
		}
		if blk.counts.CompareAndSwap(old, pack(s, f, d)) {
			return
		}
	}
}

// reachBlocksPerWindow is how many near blocks a window spans: a near
// block is a quarter of the window, or one bucket if the window has fewer
// than 4.
const reachBlocksPerWindow = 4

// reachNearWindows is how many of the newest windows the near blocks
// cover at the least.
const reachNearWindows = 2

// newReach returns a reach over horizon for a window of buckets buckets of
// span each.
func newReach(buckets int, span, horizon time.Duration) *reach {
	per := max(1, int64(buckets)/reachBlocksPerWindow)
	m := max(1, int64(buckets)/per)
	block := time.Duration(per) * span
	n := int64((horizon + block - 1) / block)
	// The near blocks reach back to a far block's start at least
	// reachNearWindows windows back: m−1 more cover any current block.
	nNear, nFar := reachNearWindows*m+m-1, (n+m-1)/m+1
	if n <= nNear+nFar || m == 1 {
		nNear, nFar = n, 0
	}
	blocks := make([]reachBlock, nNear+nFar)
	for i := range blocks {
		blocks[i].num.Store(-1)
	}
	return &reach{per: per, m: m, span: n, near: blocks[:nNear:nNear], far: blocks[nNear:]}
}

// bucketDone takes in a finished bucket of the outcomes window, passed
// buckets after which came and went empty.
func (r *reach) bucketDone(done rollingwindow.Bucket[int64], passed int64) {
	b := r.next.Load()
	r.next.Store(b + 1 + passed)
	if done.Count == 0 {
		return
	}
	r.add(b, done.Sum, done.Count-done.Sum, 0)
}

// dropsDone takes in a finished bucket of the drops window.
func (r *reach) dropsDone(done rollingwindow.Bucket[int64], passed int64) {
	b := r.nextDrop.Load()
	r.nextDrop.Store(b + 1 + passed)
	if done.Count == 0 {
		return
	}
	r.add(b, 0, 0, done.Count)
}

// add adds the counts of finished bucket b to its near and far blocks.
func (r *reach) add(b, successes, failures, drops int64) {
	num := b / r.per
	if blk := block(r.near, num); blk != nil {
		blk.add(successes, failures, drops)
	}
	if len(r.far) > 0 {
		if blk := block(r.far, num/r.m); blk != nil {
			blk.add(successes, failures, drops)
		}
	}
}

// block returns block num of ring, emptied first if its slot held an older
// block, or nil if its slot holds a newer one: a bucket of the drops
// window, which moves on only when read, can finish long after its time.
// The windows' locks serialize each block's writers; the two windows'
// writers may race on recycling a slot, which costs at most a bucket's
// counts.
func block(ring []reachBlock, num int64) *reachBlock {
	blk := &ring[num%int64(len(ring))]
	old := blk.num.Load()
	if old < num && blk.num.CompareAndSwap(old, num) {
		blk.counts.Store(0)
	} else if old > num {
		return nil
	}
	return blk
}

// read returns the successes, failures and drops of the current bucket
// (succ, fail and drop) and of the newest blocks, newest first, stopping
// once successes and failures add up to calls or the horizon is passed. A
// near block is read whole; of a far block, a window of calls, only the
// part still wanted is read, in the block's proportions, so that a
// window's worth of older calls does not outweigh the newer ones. A
// reader racing with a block being recycled may miss that block's calls.
func (r *reach) read(calls, succ, fail, drop int64) (successes, failures, drops int64) {
	successes, failures, drops = succ, fail, drop
	if successes+failures >= calls {
		return successes, failures, drops
	}
	newest := r.next.Load() / r.per // the near block of the current bucket
	oldest := max(0, newest-r.span+1)
	low := oldest // the oldest near block read
	if len(r.far) > 0 {
		// Near blocks back to a far block's start, within the near ring.
		low = max(oldest, (newest-int64(len(r.near))+r.m)/r.m*r.m)
	}
	enough := func(ring []reachBlock, num int64, trim bool) bool {
		blk := &ring[num%int64(len(ring))]
		if blk.num.Load() != num {
			return false // no finished bucket of it held a call
		}
		s, f, d := unpack(blk.counts.Load())
		if need := calls - successes - failures; trim && s+f >= need {
			// The part of the block that makes calls, in its proportions.
			f = (f*need + (s+f)/2) / (s + f)
			successes, failures, drops = successes+need-f, failures+f, drops+d*need/(s+f)
			return true
		}
		successes, failures, drops = successes+s, failures+f, drops+d
		return successes+failures >= calls
	}
	for num := newest; num >= low; num-- {
		if enough(r.near, num, false) {
			return successes, failures, drops
		}
	}
	for num := low/r.m - 1; num >= 0 && num*r.m >= oldest; num-- {
		if enough(r.far, num, true) {
			break
		}
	}
	return successes, failures, drops
}

// readReach fills c's reached counts at offset t, cur being the outcomes
// window's current bucket, when the formula reads back and the window
// holds fewer calls than it wants.
func (b *googleBreaker) readReach(t time.Duration, cur rollingwindow.Bucket[int64], c *tally) {
	if b.reach == nil || c.successes+c.failures >= b.formula.evidence {
		return
	}
	_, curDrops := b.drops.PartsAtOffset(t)
	c.reachSuccesses, c.reachFailures, c.reachDrops = b.reach.read(b.formula.evidence, cur.Sum, cur.Count-cur.Sum, curDrops.Count)
}

// bucketDone takes in a finished bucket of the outcomes window for the
// figures kept over finished buckets.
func (b *googleBreaker) bucketDone(done rollingwindow.Bucket[int64], passed int64) {
	b.streaks.bucketDone(done, passed)
	if b.reach != nil {
		b.reach.bucketDone(done, passed)
	}
}

// dropsDone takes in a finished bucket of the drops window.
func (b *googleBreaker) dropsDone(done rollingwindow.Bucket[int64], passed int64) {
	if passed > 0 {
		b.streaks.newestDrops.Store(0)
	} else {
		b.streaks.newestDrops.Store(done.Count)
	}
	if b.reach != nil {
		b.reach.dropsDone(done, passed)
	}
}

// horizonOrDefault is the horizon of WithEvidence, or its default.
func (o *options) horizonOrDefault() time.Duration {
	if o.horizon == 0 {
		return DefaultHorizonWindows * o.window
	}
	return o.horizon
}
