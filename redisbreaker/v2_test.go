package redisbreaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/fleet"
)

func TestV2_roundTrip(t *testing.T) {
	at := time.UnixMilli(1704067200000)
	c := countsV2{120, 3, 0, 40, 0, 120, 3, 0, 0, 0}
	v := encodeV2(at, c)
	assert.Equal(t, "2 1704067200000 120 3 0 40 0 120 3 0 0 0", v)
	got, back, err := parseV2(v)
	require.NoError(t, err)
	assert.True(t, at.Equal(got))
	assert.Equal(t, c, back)

	for _, bad := range []string{"", "3 1 2", "2 x 0 0 0 0 0 0 0 0 0 0", "2 1 -1 0 0 0 0 0 0 0 0 0"} {
		_, _, err := parseV2(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestV2History(t *testing.T) {
	own := fleet.History{Span: 100 * time.Millisecond, Size: 5}
	at := time.UnixMilli(1000) // bucket 10 is live: 9 is the newest finished
	h := v2History(at, countsV2{6, 3, 1, 0, 0, 10, 4, 1, 0, 0}, own)
	assert.Equal(t, fleet.History{Span: own.Span, Size: 5, Newest: 9,
		Buckets: []fleet.Bucket{{Successes: 1}, {Successes: 2, Failures: 1}, {Successes: 1, Failures: 1},
			{Successes: 2, Failures: 1, Drops: 1}},
		NewestBlock: 1, Blocks: []fleet.Bucket{{Successes: 4, Failures: 1}}}, h,
		"the window spread evenly over its 4 finished buckets; what was read back for beyond it in the block before")
	assert.Equal(t, fleet.History{}, v2History(at, countsV2{}, own), "nothing to add")
}

func TestCountsV2Of(t *testing.T) {
	own := fleet.History{Span: 100 * time.Millisecond, Size: 4, Newest: 9,
		Buckets:     []fleet.Bucket{{Successes: 5, Failures: 1}, {Failures: 2}, {}, {Failures: 3, Drops: 4}},
		NewestBlock: 1, Blocks: []fleet.Bucket{{Successes: 50}, {Successes: 20, Failures: 1}}}
	assert.Equal(t, countsV2{5, 6, 4, 0, 5, 33, 7, 4, 0, 0}, countsV2Of(own),
		"window; newest run of failures; read back to 40 admitted calls, the oldest block in part")
	own.Buckets = own.Buckets[1:]
	own.Blocks = nil
	assert.Equal(t, countsV2{0, 5, 4, 0, 5, 0, 5, 4, 1, 0}, countsV2Of(own), "down: the window's buckets all failed")
}
