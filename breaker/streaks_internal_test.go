package breaker

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

// streakBucket is a finished bucket of the outcomes window, and whether a
// call was dropped in it.
type streakBucket struct {
	done    rollingwindow.Bucket[int64]
	dropped bool
}

// active reports whether anybody called in the bucket: only such a bucket
// is sure to be read while current.
func (b streakBucket) active() bool { return b.done.Count > 0 || b.dropped }

// streakState is what the formula reads of streaks.
type streakState struct {
	up, down, downBuckets int64
	recovering            bool
}

func (s *streaks) state() streakState {
	return streakState{s.up.Load(), s.down.Load(), s.downBuckets.Load(), s.recovering.Load()}
}

// randomBuckets returns n buckets of light traffic: most without calls,
// the others holding successes, failures, both, or only drops.
func randomBuckets(r *rand.Rand, n int) []streakBucket {
	seq := make([]streakBucket, n)
	for i := range seq {
		x := r.IntN(100)
		switch {
		case x < 55: // nobody called
		case x < 70:
			seq[i].done = rollingwindow.Bucket[int64]{Sum: 1 + r.Int64N(3)}
			seq[i].done.Count = seq[i].done.Sum
		case x < 85:
			seq[i].done = rollingwindow.Bucket[int64]{Count: 1 + r.Int64N(3)}
		case x < 90:
			seq[i].done = rollingwindow.Bucket[int64]{Sum: 1, Count: 2}
		default:
			seq[i].dropped = true
		}
		if x >= 55 && x < 90 && r.IntN(4) == 0 {
			seq[i].dropped = true
		}
	}
	return seq
}

// The runs are the same whether the outcomes window reports each bucket
// without calls on its own (the window is read often: Stats, a fleet's
// publishing) or with the bucket before it (read only by calls), or
// anything between.
func TestStreaks_bucketDone_sameHoweverReported(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 100 {
		seq := randomBuckets(r, 300)
		for _, poll := range []float64{0, 0.1, 0.5} {
			t.Run(fmt.Sprintf("trial %d, read %.0f %% of the idle buckets", trial, 100*poll), func(t *testing.T) {
				each := streaks{size: DefaultBuckets}
				reported := streaks{size: DefaultBuckets}
				next := 0 // the next bucket each has taken in
				for i := 0; i < len(seq); {
					// The window moves at the next bucket read: one with
					// calls, or one a poll happens to read.
					j := i + 1
					for j < len(seq) && !seq[j].active() && !(r.Float64() < poll) {
						j++
					}
					if seq[i].dropped {
						reported.sawDrop()
					}
					reported.bucketDone(seq[i].done, int64(j-i-1))
					for ; next < j; next++ {
						if seq[next].dropped {
							each.sawDrop()
						}
						each.bucketDone(seq[next].done, 0)
					}
					require.Equal(t, each.state(), reported.state(), "after bucket %d", j-1)
					i = j
				}
			})
		}
	}
}

// A down run spans its failing buckets and those between them; drops keep
// it going across a window without outcomes; a window in which nobody
// called ends it.
func TestStreaks_bucketDone_runs(t *testing.T) {
	fail := rollingwindow.Bucket[int64]{Count: 1}
	succeed := rollingwindow.Bucket[int64]{Sum: 1, Count: 1}
	quiet := rollingwindow.Bucket[int64]{}
	s := streaks{size: DefaultBuckets}

	s.bucketDone(fail, 5)
	assert.Equal(t, streakState{down: 1, downBuckets: 1}, s.state(), "the buckets after the newest failing one are not yet part of the run")
	s.bucketDone(fail, 0)
	assert.Equal(t, streakState{down: 2, downBuckets: 7}, s.state(), "two failing buckets and the five between them")
	for range DefaultBuckets {
		s.sawDrop()
		s.bucketDone(quiet, 0)
	}
	assert.Equal(t, streakState{down: 2, downBuckets: 7}, s.state(), "a window of drops: the run goes on")
	s.bucketDone(fail, 0)
	assert.Equal(t, streakState{down: 3, downBuckets: 28}, s.state())
	s.bucketDone(succeed, 0)
	assert.Equal(t, streakState{up: 1, recovering: true}, s.state(), "after a run that spanned a window")

	s.bucketDone(fail, DefaultBuckets-3)
	s.bucketDone(fail, 0)
	assert.Equal(t, streakState{down: 2, downBuckets: DefaultBuckets - 1}, s.state())
	s.bucketDone(quiet, DefaultBuckets-3)
	assert.Equal(t, streakState{down: 2, downBuckets: DefaultBuckets - 1}, s.state(), "a bucket short of a quiet window")
	s.bucketDone(quiet, 0)
	assert.Equal(t, streakState{}, s.state(), "nobody called for a window: every run ends")

	s.bucketDone(succeed, 0)
	s.bucketDone(fail, DefaultBuckets) // the window started afresh
	assert.Equal(t, streakState{}, s.state())
}
