package fleet_test

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/fleet"
)

func TestHistory_Merge(t *testing.T) {
	a := fleet.History{Span: span, Size: 4, Newest: 10, Buckets: []fleet.Bucket{{Successes: 1}, {Failures: 2}},
		NewestBlock: 1, Blocks: []fleet.Bucket{{Successes: 5}}}
	b := fleet.History{Span: span, Size: 4, Newest: 11, Buckets: []fleet.Bucket{{Failures: 1}, {Drops: 3}},
		NewestBlock: 2, Blocks: []fleet.Bucket{{Failures: 7}}}
	m, err := a.Merge(b)
	require.NoError(t, err)
	assert.Equal(t, fleet.History{Span: span, Size: 4, Newest: 11,
		Buckets:     []fleet.Bucket{{Successes: 1}, {Failures: 3}, {Drops: 3}},
		NewestBlock: 2, Blocks: []fleet.Bucket{{Successes: 5}, {Failures: 7}}}, m,
		"aligned by bucket number and by block number")
	n, err := b.Merge(a)
	require.NoError(t, err)
	assert.Equal(t, m, n, "in either order")

	z, err := fleet.History{}.Merge(a)
	require.NoError(t, err)
	assert.Equal(t, a, z, "the zero History adds nothing")
	z, err = a.Merge(fleet.History{})
	require.NoError(t, err)
	assert.Equal(t, a, z)
}

// Buckets older than two windows before the newest go to their blocks.
func TestHistory_Merge_oldBucketsGoToTheirBlocks(t *testing.T) {
	old := fleet.History{Span: span, Size: 4, Newest: 3, Buckets: []fleet.Bucket{{Failures: 1}, {Failures: 2}}}
	recent := fleet.History{Span: span, Size: 4, Newest: 20, Buckets: []fleet.Bucket{{Successes: 1}}}
	m, err := old.Merge(recent)
	require.NoError(t, err)
	assert.Equal(t, int64(20), m.Newest)
	assert.Len(t, m.Buckets, 8)
	assert.Equal(t, fleet.Bucket{Successes: 1}, m.Buckets[7])
	assert.Equal(t, int64(0), m.NewestBlock)
	assert.Equal(t, []fleet.Bucket{{Failures: 3}}, m.Blocks)
}

func TestHistory_Merge_otherGrid(t *testing.T) {
	a := fleet.History{Span: span, Size: 20, Newest: 1}
	for _, tc := range []struct {
		name string
		b    fleet.History
		want string
	}{
		{"span", fleet.History{Span: time.Second, Size: 20, Newest: 1},
			"fleet: invalid history: buckets of 100ms, 20 to a window, and of 1s, 20 to a window, do not add up"},
		{"size", fleet.History{Span: span, Size: 10, Newest: 1},
			"fleet: invalid history: buckets of 100ms, 20 to a window, and of 100ms, 10 to a window, do not add up"},
		{"invalid", fleet.History{Span: -1, Size: 20},
			"fleet: invalid history: span -1ns: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.Merge(tc.b)
			assert.ErrorIs(t, err, fleet.ErrInvalidHistory)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestHistory_MarshalBinary(t *testing.T) {
	h := fleet.History{Span: span, Size: 20, Newest: 17040672000,
		Buckets: []fleet.Bucket{{Successes: 3, Failures: 1}, {Drops: 300}}, NewestBlock: 852033599,
		Blocks: []fleet.Bucket{{Successes: 40}}}
	data, err := h.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t,
		"01"+ // version
			"80c2d72f"+ // span: 100,000,000 ns
			"14"+ // size: 20
			"8094a0fb7e"+ // newest, zig-zag: 34,081,344,000
			"02"+"030100"+"0000ac02"+ // 2 buckets: 3 1 0, 0 0 300
			"fe80c8ac06"+ // newest block, zig-zag: 1,704,067,198
			"01"+"280000", // 1 block
		hex.EncodeToString(data))
	var back fleet.History
	require.NoError(t, back.UnmarshalBinary(data))
	assert.Equal(t, h, back)

	data, err = fleet.History{}.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 0}, data, "the zero History: version, span 0")
	back = h
	require.NoError(t, back.UnmarshalBinary(data))
	assert.Equal(t, fleet.History{}, back)

	_, err = fleet.History{Span: span, Size: 20, Buckets: []fleet.Bucket{{Failures: -1}}}.MarshalBinary()
	assert.EqualError(t, err, "fleet: invalid history: bucket 0 failures -1: must be between 0 and 1125899906842624")
}

func TestHistory_UnmarshalBinary_badInput(t *testing.T) {
	valid, err := fleet.History{Span: span, Size: 20, Newest: 5, Buckets: []fleet.Bucket{{Successes: 1}}}.MarshalBinary()
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "fleet: invalid history: empty"},
		{"unknown version", []byte{3, 1, 2}, "fleet: invalid history: version 3: this code reads version 1"},
		{"truncated span", []byte{1, 0x80}, "fleet: invalid history: span at byte 1: truncated"},
		{"overlong varint", append([]byte{1}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
			"fleet: invalid history: span at byte 1: varint overflows 64 bits"},
		{"size 0", []byte{1, 1, 0}, "fleet: invalid history: size at byte 3: 0: must be between 1 and 65536"},
		{"truncated bucket", []byte{1, 1, 2, 0, 1, 0x80, 0x80, 0x80},
			"fleet: invalid history: bucket 0 successes at byte 5: truncated"},
		{"too many buckets", []byte{1, 1, 2, 0, 5}, "fleet: invalid history: bucket count at byte 5: 5: at most 4"},
		{"more buckets than bytes", []byte{1, 1, 2, 0, 3, 0}, "fleet: invalid history: bucket count at byte 5: 3: more than the 1 bytes left hold"},
		{"count too large", []byte{1, 1, 2, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x04, 0, 0, 0, 0},
			"fleet: invalid history: bucket 0 successes at byte 5: 2251799813685248: above 1125899906842624"},
		{"newest out of range", []byte{1, 1, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0},
			"fleet: invalid history: newest bucket -9223372036854775808: must be between -2^62 and 2^62"},
		{"trailing bytes", append(append([]byte(nil), valid...), 0), "fleet: invalid history: 1 bytes after the history"},
		{"bytes after empty", []byte{1, 0, 0}, "fleet: invalid history: 1 bytes after an empty history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fleet.History{Span: span, Size: 20, Newest: 7}
			before := h
			err := h.UnmarshalBinary(tc.data)
			assert.ErrorIs(t, err, fleet.ErrInvalidHistory)
			assert.EqualError(t, err, tc.want)
			assert.Equal(t, before, h, "unchanged")
		})
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, h := range []fleet.History{{}, {Span: span, Size: 20, Newest: 17040672000,
		Buckets: []fleet.Bucket{{Successes: 3, Failures: 1}, {Drops: 300}}, NewestBlock: 852033599,
		Blocks: []fleet.Bucket{{Successes: 40}}}} {
		data, err := h.MarshalBinary()
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte{1, 1, 2, 0, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		var h fleet.History
		if err := h.UnmarshalBinary(data); err != nil {
			require.ErrorIs(t, err, fleet.ErrInvalidHistory)
			require.Equal(t, fleet.History{}, h)
			return
		}
		again, err := h.MarshalBinary()
		require.NoError(t, err, "what was read writes")
		var back fleet.History
		require.NoError(t, back.UnmarshalBinary(again))
		require.Equal(t, h, back)
		_, err = h.Merge(back)
		require.NoError(t, err, "a history read merges with itself")
	})
}

func FuzzMerge(f *testing.F) {
	a, _ := fleet.History{Span: span, Size: 4, Newest: 10, Buckets: []fleet.Bucket{{Successes: 1}, {Failures: 2}},
		NewestBlock: 1, Blocks: []fleet.Bucket{{Successes: 5}}}.MarshalBinary()
	b, _ := fleet.History{Span: span, Size: 4, Newest: -3, Buckets: []fleet.Bucket{{Failures: 1}}}.MarshalBinary()
	f.Add(a, b)
	f.Fuzz(func(t *testing.T, x, y []byte) {
		var a, b fleet.History
		if a.UnmarshalBinary(x) != nil || b.UnmarshalBinary(y) != nil {
			return
		}
		m, err := a.Merge(b)
		if err != nil {
			require.ErrorIs(t, err, fleet.ErrInvalidHistory)
			return
		}
		_, err = m.MarshalBinary()
		require.NoError(t, err, "a merge is a valid history")
	})
}
