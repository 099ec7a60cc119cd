package serverside

import (
	"math/big"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/criticality"
)

// The fuzz targets below read what a client sends (attempt numbers, a
// claimed level) and check properties of the result, not just the absence
// of a panic: its range, that it agrees with a model written another way
// (arbitrary-precision numbers, a level's names), that it is the same on a
// second read, that what the wire writers write reads back as itself, and
// that a long input allocates nothing. Their seed corpora are in
// testdata/fuzz; go test runs them, make fuzz explores from them.

// bigDigits is the model of Digits: v through math/big, capped at limit.
func bigDigits(v string, limit int64) (int64, bool) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, false
	}
	x, ok := new(big.Int).SetString(v, 10)
	if !ok {
		return 0, false
	}
	if x.Cmp(big.NewInt(limit)) > 0 {
		return limit, true
	}
	return x.Int64(), true
}

// allocatedBytes returns the bytes f allocates on average over runs calls.
func allocatedBytes(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// digitsSink keeps the compiler from dropping a call whose allocations
// are counted.
var digitsSink int64

func FuzzDigits(f *testing.F) {
	f.Add("300", int64(300))
	f.Fuzz(func(t *testing.T, v string, limit int64) {
		if limit < 0 {
			limit = -(limit + 1)
		}
		n, ok := Digits(v, limit)
		wantN, wantOK := bigDigits(v, limit)
		require.Equal(t, wantOK, ok, "%q", v)
		require.Equal(t, wantN, n, "%q capped at %d", v, limit)
		require.Equal(t, IsDigits(v), ok)
		require.True(t, n >= 0 && n <= limit, "%d out of [0, %d]", n, limit)
		if ok && n < limit {
			back, _ := Digits(strconv.FormatInt(n, 10), limit)
			require.Equal(t, n, back, "the number written reads back")
		}
		if len(v) > 18 {
			require.Zero(t, testing.AllocsPerRun(1, func() { digitsSink, _ = Digits(v, limit) }), "a long number allocates")
		}
	})
}

func FuzzParseAttempt(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		n := ParseAttempt(v)
		require.True(t, n >= 1 && n <= MaxAttempt, "%q read as %d", v, n)
		require.Equal(t, n, ParseAttempt(v), "a second read")
		want, ok := bigDigits(v, MaxAttempt)
		if !ok || want < 1 {
			want = 1
		}
		require.Equal(t, int(want), n, "%q", v)
		// What a Transport writes for attempt n (strconv.Itoa) reads as n.
		require.Equal(t, n, ParseAttempt(strconv.Itoa(n)))
		if len(v) > 18 {
			require.Zero(t, testing.AllocsPerRun(1, func() { ParseAttempt(v) }), "a long header allocates")
		}
	})
}

func FuzzAfterPrevious(f *testing.F) {
	f.Fuzz(func(t *testing.T, joined string) {
		var vs []string // the values of the metadata key, comma-separated
		if joined != "" {
			vs = strings.Split(joined, ",")
		}
		n := AfterPrevious(vs)
		require.True(t, n >= 1 && n <= MaxAttempt, "%q read as %d", vs, n)
		want := int64(1)
		for _, v := range vs {
			if p, ok := bigDigits(v, MaxAttempt); ok {
				want = max(want, min(p+1, MaxAttempt))
			}
		}
		require.Equal(t, int(want), n, "%q", vs)
		reversed := slices.Clone(vs)
		slices.Reverse(reversed)
		require.Equal(t, n, AfterPrevious(reversed), "the order of the values does not count")
		// What a client interceptor writes for attempt n (n-1 previous ones)
		// reads as n.
		require.Equal(t, n, AfterPrevious([]string{strconv.Itoa(n - 1)}))
		if len(joined) > 18 {
			require.Zero(t, testing.AllocsPerRun(1, func() { AfterPrevious(vs) }), "long metadata allocates")
		}
	})
}

func FuzzClaimed(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		c := Claimed(v)
		require.True(t, c.Valid(), "%q read as %v", v, c)
		require.Equal(t, c, Claimed(v), "a second read")
		if c != criticality.Default {
			require.True(t, asciiEqualFold(v, c.String()), "%q read as %v", v, c)
		}
		for _, l := range []criticality.Level{criticality.CriticalPlus, criticality.Critical,
			criticality.SheddablePlus, criticality.Sheddable} {
			if asciiEqualFold(v, l.String()) {
				require.Equal(t, l, c, "%q", v)
			}
		}
		// What a client writes (Level.String) reads back as the level.
		require.Equal(t, c, Claimed(c.String()))
	})
}

// asciiEqualFold is the model of a level's name in any case: ASCII letters
// only, as a header's value is ASCII.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// TestParseAttempt_hugeNumberAllocatesNothing: a header of a million digits
// allocated a copy of itself, through strconv's error.
func TestParseAttempt_hugeNumberAllocatesNothing(t *testing.T) {
	huge := "1" + strings.Repeat("0", 1<<20)
	vs := []string{huge}
	assert.Equal(t, MaxAttempt, ParseAttempt(huge))
	assert.Equal(t, MaxAttempt, AfterPrevious(vs))
	assert.Zero(t, testing.AllocsPerRun(10, func() { ParseAttempt(huge) }), "ParseAttempt")
	assert.Zero(t, testing.AllocsPerRun(10, func() { AfterPrevious(vs) }), "AfterPrevious")
	assert.Less(t, allocatedBytes(10, func() { AfterPrevious(vs) }), uint64(1024), "AfterPrevious")
}

// TestClaimed_hugeValue: a claimed level of a megabyte costs a bounded
// amount of memory (the error Claimed drops quotes 32 bytes of it).
func TestClaimed_hugeValue(t *testing.T) {
	huge := strings.Repeat("CRITICAL_PLUS", 1<<16)
	assert.Equal(t, criticality.Default, Claimed(huge))
	assert.Less(t, allocatedBytes(10, func() { Claimed(huge) }), uint64(1024))
}
