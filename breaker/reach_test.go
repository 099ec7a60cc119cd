package breaker

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

func TestNewReach_blocks(t *testing.T) {
	r := newReach(20, 100*time.Millisecond, time.Minute)
	assert.Equal(t, int64(5), r.per, "a quarter of the window per near block")
	assert.Equal(t, int64(4), r.m, "a window per far block")
	assert.Len(t, r.near, 11, "two windows back to a far block's start, from any near block")
	assert.Len(t, r.far, 31, "the horizon's 30 windows and the current one")
	assert.Equal(t, uintptr(16), unsafe.Sizeof(reachBlock{}), "a block number and one word of counts: 42 blocks take 672 bytes")
	r = newReach(3, time.Second, 10*time.Second)
	assert.Equal(t, int64(1), r.per, "at least one bucket per block")
	assert.Len(t, r.near, 10, "no far blocks where they would not save any")
	assert.Empty(t, r.far)
	r = newReach(20, 100*time.Millisecond, 4*time.Second)
	assert.Len(t, r.near, 8, "a horizon within the near blocks")
	assert.Empty(t, r.far)
}

func TestReach_read_newestFirstUntilEnough(t *testing.T) {
	r := newReach(20, 100*time.Millisecond, time.Minute) // blocks of 5 buckets
	// 30 buckets, each with one success and one failure, and a dropped call.
	for range 30 {
		r.bucketDone(rollingwindow.Bucket[int64]{Sum: 1, Count: 2}, 0)
		r.dropsDone(rollingwindow.Bucket[int64]{Sum: 1, Count: 1}, 0)
	}
	// The current bucket (number 30) holds a failure; its block holds no
	// finished bucket yet, the six before hold 10 calls each.
	succ, fail, drops := r.read(25, 0, 1, 0)
	assert.Equal(t, [3]int64{15, 16, 15}, [3]int64{succ, fail, drops}, "three whole blocks: 31 calls, the first 25 or more")
	succ, fail, drops = r.read(1000, 0, 1, 0)
	assert.Equal(t, [3]int64{30, 31, 30}, [3]int64{succ, fail, drops}, "everything, when it is not enough")
	succ, fail, _ = r.read(1, 3, 0, 0)
	assert.Equal(t, [2]int64{3, 0}, [2]int64{succ, fail}, "the current bucket first: already enough")
}

func TestReach_read_forgetsPastTheHorizon(t *testing.T) {
	r := newReach(20, 100*time.Millisecond, 2*time.Second)         // 4 blocks of 5 buckets
	r.bucketDone(rollingwindow.Bucket[int64]{Sum: 0, Count: 7}, 0) // bucket 0, block 0
	succ, fail, _ := r.read(100, 0, 0, 0)
	assert.Equal(t, [2]int64{0, 7}, [2]int64{succ, fail})

	r.bucketDone(rollingwindow.Bucket[int64]{}, 17) // buckets 1 to 18 pass empty: bucket 19, block 3, is current
	_, fail, _ = r.read(100, 0, 0, 0)
	assert.Equal(t, int64(7), fail, "block 0 is within the horizon of block 3")

	r.bucketDone(rollingwindow.Bucket[int64]{}, 0) // bucket 20, block 4, is current
	_, fail, _ = r.read(100, 0, 0, 0)
	assert.Equal(t, int64(0), fail, "block 0 is past the horizon of block 4")

	r.bucketDone(rollingwindow.Bucket[int64]{Sum: 2, Count: 2}, 0) // bucket 20, block 4, in block 0's slot
	succ, fail, _ = r.read(100, 0, 0, 0)
	assert.Equal(t, [2]int64{2, 0}, [2]int64{succ, fail}, "the slot was emptied for its new block")
}

func TestReach_read_farBlocksPastTheNear(t *testing.T) {
	r := newReach(20, 100*time.Millisecond, time.Minute) // near blocks of 5 buckets, far of 20
	// 100 buckets (5 windows), each with one success, and one failure in
	// each of the first 40.
	for b := range 100 {
		done := rollingwindow.Bucket[int64]{Sum: 1, Count: 1}
		if b < 40 {
			done.Count = 2
		}
		r.bucketDone(done, 0)
	}
	// Current bucket 100, near block 20: the near blocks are read back to
	// near block 12 (far block 3's start), 40 successes; then far blocks.
	succ, fail, _ := r.read(50, 0, 0, 0)
	assert.Equal(t, [2]int64{50, 0}, [2]int64{succ, fail}, "and 10 of far block 2's 20 calls, the ones wanted")
	succ, fail, _ = r.read(60, 0, 0, 0)
	assert.Equal(t, [2]int64{60, 0}, [2]int64{succ, fail}, "far block 2, whole")
	succ, fail, _ = r.read(70, 0, 0, 0)
	assert.Equal(t, [2]int64{65, 5}, [2]int64{succ, fail}, "a quarter of far block 1, in its proportions")
	succ, fail, _ = r.read(1000, 0, 0, 0)
	assert.Equal(t, [2]int64{100, 40}, [2]int64{succ, fail}, "everything")

	r.bucketDone(rollingwindow.Bucket[int64]{}, 598-100) // bucket 599 is current: far block 0 is 29 windows old
	_, fail, _ = r.read(1000, 0, 0, 0)
	assert.Equal(t, int64(40), fail, "far blocks 0 and 1 are within the horizon")
	r.bucketDone(rollingwindow.Bucket[int64]{}, 0) // bucket 600 is current
	_, fail, _ = r.read(1000, 0, 0, 0)
	assert.Equal(t, int64(20), fail, "far block 0 is past the horizon")
}

func TestReach_dropsDone_late(t *testing.T) {
	r := newReach(20, 100*time.Millisecond, time.Minute)
	r.bucketDone(rollingwindow.Bucket[int64]{Sum: 0, Count: 1}, 99) // bucket 0 with a failure; bucket 100 is current
	r.bucketDone(rollingwindow.Bucket[int64]{Sum: 1, Count: 1}, 0)  // bucket 100, near block 20 in near block 9's slot
	r.dropsDone(rollingwindow.Bucket[int64]{Sum: 3, Count: 3}, 0)   // bucket 0's drops, a window later than bucket 100
	succ, fail, drops := r.read(2, 0, 0, 0)
	assert.Equal(t, [3]int64{1, 1, 3}, [3]int64{succ, fail, drops}, "bucket 0's drops in its far block, not in a newer near block")
	succ, _, drops = r.read(1, 0, 0, 0)
	assert.Equal(t, [2]int64{1, 0}, [2]int64{succ, drops})
}

func TestReachBlock_add_keepsProportionsPastItsBits(t *testing.T) {
	var blk reachBlock
	blk.add(3, 1, 2)
	s, f, d := unpack(blk.counts.Load())
	assert.Equal(t, [3]int64{3, 1, 2}, [3]int64{s, f, d})
	blk.add(reachMaxSucc, 1, 0)
	s, f, d = unpack(blk.counts.Load())
	assert.Equal(t, [3]int64{(reachMaxSucc + 4) / 2, 1, 1}, [3]int64{s, f, d}, "halved, rounding up")
	blk.add(0, 1<<40, 0)
	s, f, d = unpack(blk.counts.Load())
	assert.LessOrEqual(t, f, int64(reachMaxOther))
	assert.Positive(t, s)
	assert.Positive(t, d)
}
