package redisbreaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/fleet"
)

func TestEncodeV2(t *testing.T) {
	at := time.UnixMilli(1704067200000)
	assert.Equal(t, "2 1704067200000 120 3 0 40 0 120 3 0 0 0", encodeV2(at, countsV2{120, 3, 0, 40, 0, 120, 3, 0, 0, 0}))
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
