package evidence

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func defaults() Settings {
	return Settings{K: 1.5, Protection: 5, Aggression: 1.5, CountDrops: true, TrustRecent: true,
		Evidence: 40, Buckets: 20, Horizon: 30}
}

// history returns a history of s that finished buckets, oldest first.
func history(s Settings, buckets ...Bucket) *History {
	h := NewHistory(s)
	for _, b := range buckets {
		h.Finish(b, 0)
	}
	return h
}

func TestHistory_Share_roundTrip(t *testing.T) {
	s := defaults()
	h := history(s, Bucket{Successes: 1}, Bucket{}, Bucket{Failures: 2, Drops: 1})
	shared := h.Share(100, 1000)
	assert.Equal(t, Shared{Span: 100, Size: 20, Newest: 1002,
		Buckets: []Bucket{{Successes: 1}, {}, {Failures: 2, Drops: 1}}}, shared)

	// Merged with nothing, a history judges as it does alone.
	empty := Shared{Span: 100, Size: 20}
	assert.Equal(t, h.Summarize(), h.Merged(&empty, 1000))
}

// Merging histories is judging the buckets they add up to: the same
// summary as a history that finished the sums.
func TestHistory_Merged_isTheHistoryOfTheSums(t *testing.T) {
	s := defaults()
	own := []Bucket{{Successes: 2}, {Failures: 1}, {}, {Successes: 1, Drops: 3}, {Failures: 1}}
	others := []Bucket{{Failures: 3}, {Failures: 1}, {Drops: 2}, {Failures: 4}, {}}
	for _, offset := range []int64{0, 7, -3, 1 << 40} {
		h := history(s, own...)
		shared := history(s, others...).Share(1, offset)
		sums := make([]Bucket, len(own))
		for i := range own {
			sums[i] = own[i].Plus(others[i])
		}
		assert.Equal(t, history(s, sums...).Summarize(), h.Merged(&shared, offset), "offset %d", offset)
	}
}

// Others' buckets past the newest finished bucket wait for it; their
// older buckets go to the blocks, which reading back on light traffic
// reads.
func TestHistory_Merged_alignment(t *testing.T) {
	s := defaults()
	h := history(s, make([]Bucket, 50)...)
	others := Shared{Span: 1, Size: 20, Newest: 50, Buckets: []Bucket{{Failures: 7}}}
	assert.Equal(t, Bucket{}, h.Merged(&others, 0).Window, "bucket 50 has not finished")
	others.Newest = 49
	assert.Equal(t, Bucket{Failures: 7}, h.Merged(&others, 0).Window)
	others.Newest = 20 // left the window: in block 1
	sum := h.Merged(&others, 0)
	assert.Equal(t, Bucket{}, sum.Window)
	assert.Equal(t, Bucket{Failures: 7}, sum.Reach, "read back for on light traffic")
	num, _ := s.Ratio(&sum, Bucket{Failures: 1})
	assert.Greater(t, num, 0.0)
}

// A block of failures spans its buckets in the runs: a fleet down for a
// window loses protection.
func TestHistory_Merged_downRunThroughBlocks(t *testing.T) {
	s := defaults()
	h := history(s, make([]Bucket, 60)...)
	fails := make([]Bucket, 19)
	for i := range fails {
		fails[i] = Bucket{Failures: 1}
	}
	others := Shared{Span: 1, Size: 20, Newest: 59, Buckets: fails}
	short := h.Merged(&others, 0)
	others.NewestBlock, others.Blocks = 2, []Bucket{{Failures: 5}}
	long := h.Merged(&others, 0)
	live := Bucket{Failures: 1}
	p1, p2 := s.Probability(s.Ratio(&short, live)), s.Probability(s.Ratio(&long, live))
	assert.Greater(t, p2, p1, "down for more than a window: protection no longer applies")
}
