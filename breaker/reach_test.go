package breaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

func TestNewReach_blocks(t *testing.T) {
	r := newReach(20, 100*time.Millisecond, time.Minute)
	assert.Equal(t, int64(5), r.per, "a quarter of the window per block")
	assert.Len(t, r.blocks, 120)
	r = newReach(3, time.Second, 10*time.Second)
	assert.Equal(t, int64(1), r.per, "at least one bucket per block")
	assert.Len(t, r.blocks, 10)
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
