package redisbreaker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/fleet"
)

func TestPeriodFor(t *testing.T) {
	for _, tc := range []struct {
		base      time.Duration
		processes int64
		want      time.Duration
	}{
		{100 * time.Millisecond, 0, 100 * time.Millisecond},
		{100 * time.Millisecond, 50, 100 * time.Millisecond},
		{100 * time.Millisecond, 1_000, 100 * time.Millisecond},
		{100 * time.Millisecond, 2_000, 200 * time.Millisecond},
		{100 * time.Millisecond, 5_000, 500 * time.Millisecond},
		{100 * time.Millisecond, 10_000, time.Second},
		{100 * time.Millisecond, 1_000_000, time.Second}, // the view is never older than a second
		{2 * time.Second, 10, 2 * time.Second},           // never shorter than asked
	} {
		assert.Equal(t, tc.want, periodFor(tc.base, tc.processes), "%v, %d processes", tc.base, tc.processes)
	}
}

func TestBlock_counter(t *testing.T) {
	b := block([]byte{0, 0, 0, 7, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0xff, 0, 0})
	assert.Equal(t, int64(7), b.counter(0))
	assert.Equal(t, int64(256), b.counter(1))
	assert.Equal(t, int64(1<<32-1), b.counter(2), "unsigned")
	assert.Equal(t, int64(0), b.counter(3), "a counter cut short reads as 0, as Redis reads it")
	assert.Equal(t, int64(0), b.counter(100))
	assert.Equal(t, fleet.Bucket{Successes: 7, Failures: 256, Drops: 1<<32 - 1}, b.bucket(0))
	assert.Equal(t, fleet.Bucket{Successes: 7, Failures: 256, Drops: 1<<32 - 1}, b.sum(2))
}

func TestBitfieldArgs(t *testing.T) {
	args := bitfieldArgs("k", 2, 20, map[int64]fleet.Bucket{41: {Successes: 3, Drops: -1}}, true)
	assert.Equal(t, []any{"BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "u32", "#3", int64(3), "INCRBY", "u32", "#5", int64(-1),
		"INCRBY", "u32", "#60", int64(1)}, args, "bucket 41 is the second of block 2; zero deltas are left out; the processes last")
}

func TestBlock_add(t *testing.T) {
	var b block
	b = b.add(1, fleet.Bucket{Successes: 3, Failures: 1})
	assert.Len(t, b, 24, "grown to the bucket")
	assert.Equal(t, fleet.Bucket{Successes: 3, Failures: 1}, b.bucket(1))
	b = b.add(1, fleet.Bucket{Successes: -5, Drops: 1 << 33})
	assert.Equal(t, fleet.Bucket{Failures: 1, Drops: 1<<32 - 1}, b.bucket(1), "kept from 0 to 2^32−1, as OVERFLOW SAT keeps them")
	assert.Equal(t, fleet.Bucket{}, b.bucket(0))
}
