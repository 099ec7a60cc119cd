package breaker_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

func TestRegistry_Get_shortNamesAsGiven(t *testing.T) {
	r := breaker.MustNewRegistry()
	for _, name := range []string{"", "api.example.com", "server:/pkg.Service/Method", strings.Repeat("é", breaker.MaxNameLen/2),
		strings.Repeat("a", breaker.MaxNameLen)} {
		assert.Equal(t, name, r.Get(name).Name(), "a name of %d bytes is kept as it is", len(name))
	}
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = r.Get("api.example.com") }),
		"a short name's lookup does not allocate")
}

func TestRegistry_Get_longNamesCut(t *testing.T) {
	r := breaker.MustNewRegistry()
	prefix := strings.Repeat("a", 300)
	cases := []string{
		strings.Repeat("a", breaker.MaxNameLen+1),
		prefix + "x",
		prefix + "y",
		"x" + prefix,
		strings.Repeat("é", 1000), // 2-byte runes
		strings.Repeat("日本", 200), // 3-byte runes
		strings.Repeat("a😀", 100), // 4-byte runes at odd offsets
		"b" + strings.Repeat("😀", 100),
		strings.Repeat("\xff\x80", 200), // not UTF-8: cut where the bytes allow
	}
	seen := map[string]string{}
	for _, name := range cases {
		b := r.Get(name)
		got := b.Name()
		assert.LessOrEqual(t, len(got), breaker.MaxNameLen, "%.20q…", name)
		assert.Contains(t, got, "…", "the cut is marked")
		cut, hash, ok := strings.Cut(got, "…")
		require.True(t, ok)
		assert.True(t, strings.HasPrefix(name, cut), "the cut form starts with the name")
		assert.GreaterOrEqual(t, len(cut), breaker.MaxNameLen-3-24-3, "at most 3 bytes go to find a rune boundary")
		assert.Len(t, hash, 24)
		if utf8.ValidString(name) {
			assert.True(t, utf8.ValidString(got), "cut on a UTF-8 boundary: %q", got)
		}
		other, dup := seen[got]
		assert.False(t, dup, "%.20q… and %.20q… share the cut form %q", name, other, got)
		seen[got] = name

		assert.Same(t, b, r.Get(name), "the same long name, the same breaker")
		assert.Same(t, b, r.Get(strings.Clone(name)), "the same long name, the same breaker")
		s := b.Stats()
		assert.Equal(t, got, s.Name, "Stats show the cut form")
	}
	var names []string
	r.Range(func(name string, b breaker.Breaker) bool {
		assert.Equal(t, b.Name(), name)
		names = append(names, name)
		return true
	})
	assert.Len(t, names, len(cases), "one breaker per long name")
	for _, name := range names {
		assert.LessOrEqual(t, len(name), breaker.MaxNameLen)
	}
}

func TestRegistry_Configure_longName(t *testing.T) {
	r := breaker.MustNewRegistry()
	name := strings.Repeat("h", 1<<20)
	require.NoError(t, r.Configure(name, breaker.WithK(3)))
	assert.Same(t, r.Get(name), r.Get(name))
	assert.ErrorIs(t, r.Configure(name, breaker.WithK(4)), breaker.ErrInvalidOption, "the long name's breaker is made")

	name = strings.Repeat("u", 1<<20)
	require.NoError(t, r.NoBreakerFor(name))
	p, err := r.Get(name).Allow()
	require.NoError(t, err)
	p.Reject("fails")
	assert.LessOrEqual(t, len(r.Get(name).Name()), breaker.MaxNameLen, "NoBreakerFor keeps the cut form too")
	s := r.Get(name).Stats()
	assert.Zero(t, s.TotalFailures, "unguarded: nothing is recorded")
}

// longNameRuns numbers the runs of TestDo_longName, whose breaker lives in
// the default registry: each run of -count asks for a name of its own.
var longNameRuns atomic.Int64

func TestDo_longName(t *testing.T) {
	name := fmt.Sprintf("TestDo_longName/%d/", longNameRuns.Add(1)) + strings.Repeat("n", 1<<20)
	errFailed := errors.New("failed")
	assert.ErrorIs(t, breaker.Get(name).Do(func() error { return errFailed }), errFailed)
	b := breaker.Get(name)
	assert.LessOrEqual(t, len(b.Name()), breaker.MaxNameLen)
	s := b.Stats()
	assert.Equal(t, int64(1), s.TotalFailures, "breaker.Do and breaker.Get with one long name share a breaker")
}

// heapGrowth returns how much the live heap grew while f ran, after
// garbage collection.
func heapGrowth(f func()) int64 {
	var before, after runtime.MemStats
	// Twice: what sync.Pools hold goes at the second collection.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// A registry fed 200 names of 1 MiB each held about 200 MiB (issue 22).
func TestRegistry_Get_longNamesCostABoundedAmount(t *testing.T) {
	const (
		keys  = 200
		limit = 100
		size  = 1 << 20
	)
	// What a registry of limit breakers with short names holds: the
	// breakers and their entries.
	short := breaker.MustNewRegistry()
	base := heapGrowth(func() {
		for i := range limit {
			breaker.Keyed(short, fmt.Sprintf("host-%04d.example.com", i))
		}
	})
	perBreaker := base / limit

	long := breaker.MustNewRegistry()
	long.SetLimit(limit)
	grown := heapGrowth(func() {
		buf := []byte(strings.Repeat("a", size))
		for i := range keys {
			copy(buf[size-8:], fmt.Sprintf("%08d", i)) // distinct names that share a long prefix
			breaker.Keyed(long, string(buf))           // a new 1 MiB string, unreferenced once the lookup returns
		}
	})
	// Each 1 MiB name also keeps none of a larger string it was sliced from.
	sliced := breaker.MustNewRegistry()
	slicedGrowth := heapGrowth(func() {
		buf := []byte(strings.Repeat("b", size))
		for i := range keys {
			copy(buf[size-8:], fmt.Sprintf("%08d", i))
			big := string(buf)
			sliced.Get(big[size-12:]) // "bbbb" and the number: 12 bytes of a 1 MiB string
		}
	})

	bound := int64(limit) * (perBreaker + breaker.MaxNameLen)
	t.Logf("%d names of %d bytes, limit %d: the heap grew by %d bytes (short names: %d, %d per breaker); bound %d",
		keys, size, limit, grown, base, perBreaker, bound)
	assert.LessOrEqual(t, grown, bound+bound/10+64<<10, "limit × (breaker + bounded name), with 10 %% and 64 KiB of slack")
	assert.Less(t, slicedGrowth, int64(keys)*(perBreaker+breaker.MaxNameLen)*11/10+64<<10,
		"a short name sliced from a 1 MiB string holds nothing of it")

	n := 0
	long.Range(func(name string, _ breaker.Breaker) bool {
		assert.LessOrEqual(t, len(name), breaker.MaxNameLen)
		n++
		return true
	})
	assert.LessOrEqual(t, n, limit)
	runtime.KeepAlive(short)
	runtime.KeepAlive(long)
	runtime.KeepAlive(sliced)
}

func BenchmarkRegistry_Get_longName(b *testing.B) {
	r := breaker.MustNewRegistry()
	name := strings.Repeat("a", 4096)
	r.Get(name)
	b.ReportAllocs()
	for range b.N {
		r.Get(name)
	}
}
