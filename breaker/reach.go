package breaker

import (
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

// reach keeps the outcomes of the calls admitted over a longer span than
// the window, the horizon, in blocks of a few of the window's buckets, so
// that on light traffic the formula can read back until it holds enough
// calls to mean something (see [WithEvidence]). The outcomes window
// reports each finished bucket to it (bucketDone, under the window's
// lock); readers read the blocks' counts without a lock.
type reach struct {
	per int64 // the window's buckets per block
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
	blocks   []reachBlock // block n at n mod len(blocks)
}

// reachBlock holds the outcomes of the finished buckets numbered from
// num·per to num·per + per − 1.
type reachBlock struct {
	num                        atomic.Int64 // the block it holds; −1 for none
	successes, failures, drops atomic.Int64
}

// reachBlocksPerWindow is how many blocks a window spans: a block is a
// quarter of the window, or one bucket if the window has fewer than 4.
const reachBlocksPerWindow = 4

// newReach returns a reach over horizon for a window of buckets buckets of
// span each.
func newReach(buckets int, span, horizon time.Duration) *reach {
	per := max(1, int64(buckets)/reachBlocksPerWindow)
	block := time.Duration(per) * span
	n := int((horizon + block - 1) / block)
	r := &reach{per: per, blocks: make([]reachBlock, n)}
	for i := range r.blocks {
		r.blocks[i].num.Store(-1)
	}
	return r
}

// bucketDone takes in a finished bucket of the outcomes window, passed
// buckets after which came and went empty.
func (r *reach) bucketDone(done rollingwindow.Bucket[int64], passed int64) {
	b := r.next.Load()
	r.next.Store(b + 1 + passed)
	if done.Count == 0 {
		return
	}
	blk := r.block(b / r.per)
	blk.successes.Add(done.Sum)
	blk.failures.Add(done.Count - done.Sum)
}

// dropsDone takes in a finished bucket of the drops window.
func (r *reach) dropsDone(done rollingwindow.Bucket[int64], passed int64) {
	b := r.nextDrop.Load()
	r.nextDrop.Store(b + 1 + passed)
	if done.Count == 0 {
		return
	}
	r.block(b / r.per).drops.Add(done.Count)
}

// block returns block num, emptied first if its slot held an older block.
// The windows' locks serialize each counter's writers; the two windows'
// writers may race on recycling a slot, which costs at most a bucket's
// counts.
func (r *reach) block(num int64) *reachBlock {
	blk := &r.blocks[num%int64(len(r.blocks))]
	if old := blk.num.Load(); old < num && blk.num.CompareAndSwap(old, num) {
		blk.successes.Store(0)
		blk.failures.Store(0)
		blk.drops.Store(0)
	}
	return blk
}

// read returns the successes, failures and drops of the current bucket
// (succ, fail and drop) and of the newest blocks, newest first, stopping
// once successes and failures add up to calls or the horizon is passed. A
// reader racing with a block being recycled may miss that block's calls.
func (r *reach) read(calls, succ, fail, drop int64) (successes, failures, drops int64) {
	successes, failures, drops = succ, fail, drop
	if successes+failures >= calls {
		return successes, failures, drops
	}
	newest := r.next.Load() / r.per // the block of the current bucket
	for num := newest; num > newest-int64(len(r.blocks)) && num >= 0; num-- {
		blk := &r.blocks[num%int64(len(r.blocks))]
		if blk.num.Load() != num {
			continue // no finished bucket of it held a call
		}
		successes += blk.successes.Load()
		failures += blk.failures.Load()
		drops += blk.drops.Load()
		if successes+failures >= calls {
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

// horizonOrDefault is the horizon of WithEvidence, or its default.
func (o *options) horizonOrDefault() time.Duration {
	if o.horizon == 0 {
		return DefaultHorizonWindows * o.window
	}
	return o.horizon
}
