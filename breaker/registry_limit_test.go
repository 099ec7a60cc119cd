package breaker_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
	"github.com/srebreaker/srebreaker/proba"
)

func names(r *breaker.Registry) []string {
	var out []string
	r.Range(func(name string, _ breaker.Breaker) bool { out = append(out, name); return true })
	sort.Strings(out)
	return out
}

func TestRegistry_Configure_oneNameTunedApart(t *testing.T) {
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
		breaker.WithK(1), breaker.WithProtection(0))
	require.NoError(t, r.Configure("batch", breaker.WithProtection(1000)))
	batch := r.Get("batch")
	assert.Equal(t, "batch", batch.Name())

	fail(t, batch, 500, "down")
	fail(t, r.Get("api"), 500, "down")
	assert.Equal(t, 0.0, dropShare(batch, 1000), "protection 1000 for batch alone")
	assert.Greater(t, dropShare(r.Get("api"), 1000), 0.9, "the registry's options for the rest")

	require.NoError(t, r.Configure("later", breaker.WithProtection(1000)))
	fail(t, r.Get("later"), 500, "down")
	assert.Equal(t, 0.0, dropShare(r.Get("later"), 1000), "options set before the first Get")
}

// Regression: a Configure after a Get replaced the breaker, and the
// caller's went on working unseen by exporters and the status page.
func TestRegistry_Configure_afterTheBreakerIsMadeIsRefused(t *testing.T) {
	r := breaker.MustNewRegistry()
	b := r.Get("db")
	err := r.Configure("db", breaker.WithK(3))
	require.ErrorIs(t, err, breaker.ErrInvalidOption)
	assert.Contains(t, err.Error(), `Configure("db"): the breaker was made already`)
	assert.True(t, b == r.Get("db"), "the breaker callers hold stays the registry's")

	keyed := breaker.Keyed(r, "api.example.com")
	assert.ErrorIs(t, r.Configure("api.example.com", breaker.WithK(3)), breaker.ErrInvalidOption,
		"a breaker an integration made is in use too")
	assert.True(t, keyed == r.Get("api.example.com"))

	assert.ErrorIs(t, r.NoBreakerFor("db"), breaker.ErrInvalidOption)
	assert.True(t, b == r.Get("db"))
	require.NoError(t, r.NoBreakerFor("legacy"))
	require.NoError(t, r.NoBreakerFor("legacy"), "twice is no change")
	assert.True(t, r.Get("legacy").Stats().Unguarded)
}

func TestRegistry_Configure_withNameIsRefused(t *testing.T) {
	r := breaker.MustNewRegistry()
	err := r.Configure("a", breaker.WithName("b"))
	require.ErrorIs(t, err, breaker.ErrInvalidOption)
	assert.Contains(t, err.Error(), `Configure("a", WithName("b"))`)
	assert.Equal(t, "a", r.Get("a").Name())

	_, err = breaker.NewRegistry(breaker.WithName("b"))
	require.ErrorIs(t, err, breaker.ErrInvalidOption)
	assert.Contains(t, err.Error(), `NewRegistry(WithName("b"))`)
}

func TestNewRegistry_invalidOptionIsAnError(t *testing.T) {
	r, err := breaker.NewRegistry(breaker.WithK(0.5))
	assert.Nil(t, r)
	assert.EqualError(t, err, "breaker: invalid option: WithK(0.5): K must be a finite number of at least 1")
	assert.PanicsWithValue(t, err.Error(), func() { breaker.MustNewRegistry(breaker.WithK(0.5)) })
}

// Regression: with a limit, a breaker a caller held from Get was forgotten
// once other names came, and vanished from the exporters while in use;
// the Transport's per-host breakers could push out the program's own.
func TestRegistry_SetLimit_neverForgetsTheProgramsOwnNames(t *testing.T) {
	r := breaker.MustNewRegistry()
	r.SetLimit(10)
	pricing := r.Get("pricing")
	for i := range 50 {
		breaker.Keyed(r, fmt.Sprint("host-", i))
	}
	assert.True(t, pricing == r.Get("pricing"), "the breaker the caller holds is the registry's")
	assert.Contains(t, names(r), "pricing")
	assert.Len(t, names(r), 11, "10 hosts, and the program's own name besides")

	keyed := breaker.Keyed(r, "host-49")
	assert.True(t, keyed == r.Get("host-49"), "a Get of a name from outside takes its breaker as is")
	for i := range 50 {
		breaker.Keyed(r, fmt.Sprint("later-", i))
	}
	assert.Contains(t, names(r), "host-49", "and keeps it from then on")
	for i := range 20 {
		r.Get(fmt.Sprint("own-", i))
	}
	breaker.Keyed(r, "last")
	all := names(r)
	for i := range 20 {
		assert.Contains(t, all, fmt.Sprint("own-", i))
	}
	later := 0
	for _, name := range all {
		if strings.HasPrefix(name, "later-") || name == "last" {
			later++
		}
	}
	assert.LessOrEqual(t, later, 10, "the names from outside stay within the limit")
	assert.Greater(t, later, 0)
}

// Regression (issue 43): a configured name whose breaker an integration
// made first was stored as a name from outside, counted toward the limit
// and was forgotten under pressure, with the options Configure gave it.
func TestRegistry_Configure_nameFirstMadeByAnIntegrationIsNeverForgotten(t *testing.T) {
	r := breaker.MustNewRegistry()
	r.SetLimit(10)
	require.NoError(t, r.Configure("api.example.com", breaker.WithK(3)))
	api := breaker.Keyed(r, "api.example.com")
	for i := range 50 {
		breaker.Keyed(r, fmt.Sprint("host-", i))
	}
	assert.True(t, api == breaker.Keyed(r, "api.example.com"), "the breaker the integration made is kept")
	assert.True(t, api == r.Get("api.example.com"))
	all := names(r)
	assert.Contains(t, all, "api.example.com")
	assert.Len(t, all, 11, "10 hosts, and the configured name outside the limit")
}

func TestRegistry_Configure_invalidChangesNothing(t *testing.T) {
	r := breaker.MustNewRegistry()
	b := r.Get("x")
	err := r.Configure("x", breaker.WithK(0))
	assert.ErrorIs(t, err, breaker.ErrInvalidOption)
	assert.EqualError(t, err, "breaker: invalid option: WithK(0): K must be a finite number of at least 1")
	assert.True(t, b == r.Get("x"))
}

func TestRegistry_SetLimit_evictsTheLeastRecentlyUsed(t *testing.T) {
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m))
	r.SetLimit(10)
	handed := map[string]breaker.Breaker{}
	for i := range 10 {
		name := fmt.Sprint("dep-", i)
		handed[name] = breaker.Keyed(r, name)
		m.Add(time.Second)
	}
	breaker.Keyed(r, "dep-0") // used again: the most recent now
	m.Add(time.Second)
	assert.Len(t, names(r), 10)

	breaker.Keyed(r, "new") // 11 > 10: the oldest tenth goes, at least one, down to 9
	got := names(r)
	assert.Len(t, got, 9)
	assert.NotContains(t, got, "dep-1")
	assert.NotContains(t, got, "dep-2")
	assert.Contains(t, got, "dep-0")
	assert.Contains(t, got, "new")

	again := breaker.Keyed(r, "dep-1")
	assert.True(t, again != handed["dep-1"], "a forgotten name gets a new breaker")
	p, err := handed["dep-1"].Allow()
	require.NoError(t, err, "the forgotten breaker keeps working for whoever holds it")
	p.Accept()
}

func TestRegistry_SetLimit_removed(t *testing.T) {
	r := breaker.MustNewRegistry()
	r.SetLimit(5)
	r.SetLimit(0)
	for i := range 50 {
		breaker.Keyed(r, fmt.Sprint(i))
	}
	assert.Len(t, names(r), 50)
}

func TestRegistry_SetLimit_shrinks(t *testing.T) {
	r := breaker.MustNewRegistry()
	for i := range 50 {
		breaker.Keyed(r, fmt.Sprint(i))
	}
	r.SetLimit(20)
	assert.LessOrEqual(t, len(names(r)), 20)
}

func TestRegistry_SetLimit_concurrentLookups(t *testing.T) {
	r := breaker.MustNewRegistry()
	r.SetLimit(50)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				name := fmt.Sprint("host-", (g*7919+i*31)%500)
				assert.Equal(t, name, breaker.Keyed(r, name).Name())
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, len(names(r)), 50)
}

func TestRegistry_SetLimit_lookupDoesNotAllocate(t *testing.T) {
	r := breaker.MustNewRegistry()
	r.SetLimit(100)
	breaker.Keyed(r, "svc")
	breaker.Keyed(r, "svc")
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = breaker.Keyed(r, "svc") }))
}

func TestRegistry_SetLimit_one(t *testing.T) {
	r := breaker.MustNewRegistry()
	r.SetLimit(1)
	for _, name := range []string{"a", "", "b", ""} {
		assert.Equal(t, name, breaker.Keyed(r, name).Name())
		assert.Equal(t, []string{name}, names(r), "the name just looked up is the one kept")
	}
}

// churn runs the scenario of issue 11 for d on r: every 5 ms a new name
// comes (200 a second), a hot dependency is called 5 times and a dead one
// once. It returns how many times the hot breaker was replaced, and the
// share of the dead dependency's calls admitted after the first second.
func churn(r *breaker.Registry, m *clock.Mock, d time.Duration) (replaced int, deadAdmitted float64) {
	hot := breaker.Keyed(r, "hot")
	admitted, calls := 0, 0
	const tick = 5 * time.Millisecond
	for i := range int(d / tick) {
		breaker.Keyed(r, fmt.Sprint("churn-", i))
		for range 5 {
			b := breaker.Keyed(r, "hot")
			if b != hot {
				replaced++
				hot = b
			}
			p, err := b.Allow()
			if err == nil {
				p.Accept()
			}
		}
		p, err := breaker.Keyed(r, "dead").Allow()
		if err == nil {
			p.Reject("connection refused")
		}
		if time.Duration(i)*tick >= time.Second {
			calls++
			if err == nil {
				admitted++
			}
		}
		m.Add(tick)
	}
	return replaced, float64(admitted) / float64(calls)
}

// Issue 11: recency was kept to the second and ties went in any order: at
// 200 new names a second and a limit of 100, the hot breaker was replaced
// several times in 3 s and the dead dependency's shedding breaker was
// forgotten, letting 11–27% of its calls through.
func TestRegistry_SetLimit_churnKeepsTheBreakersInUse(t *testing.T) {
	run := func(limit int) (replaced int, deadAdmitted float64, kept int) {
		m := newMock()
		r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
		r.SetLimit(limit)
		replaced, deadAdmitted = churn(r, m, 3*time.Second)
		return replaced, deadAdmitted, len(names(r))
	}
	_, unbounded, _ := run(0)
	replaced, deadAdmitted, kept := run(100)
	t.Logf("dead dependency's calls admitted: %.2f%% with a limit of 100, %.2f%% without one",
		100*deadAdmitted, 100*unbounded)
	assert.Equal(t, 0, replaced, "the hot breaker is never replaced")
	assert.InDelta(t, unbounded, deadAdmitted, 0.005, "the dead dependency is shed as without a limit")
	assert.LessOrEqual(t, kept, 100)
}

// A breaker that sheds outlives breakers in use that do not: forgetting
// it would let through the calls it stops.
func TestRegistry_SetLimit_sheddingGoesLast(t *testing.T) {
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
		breaker.WithK(1), breaker.WithProtection(0))
	r.SetLimit(10)
	dead := breaker.Keyed(r, "dead")
	fail(t, dead, 100, "down")
	require.Greater(t, dropShare(dead, 100), 0.5)
	for i := range 50 { // every other name is newer and in use
		breaker.Keyed(r, fmt.Sprint("dep-", i))
		breaker.Keyed(r, fmt.Sprint("dep-", i))
	}
	assert.Contains(t, names(r), "dead")
	assert.True(t, dead == breaker.Keyed(r, "dead"))

	m.Add(time.Minute) // its window is empty: it sheds no more and goes as any other
	for i := range 50 {
		breaker.Keyed(r, fmt.Sprint("later-", i))
	}
	assert.NotContains(t, names(r), "dead")
}

// A breaker that sheds on its fleet's history, with a clean window of its
// own, is shedding too: it goes last.
func TestRegistry_SetLimit_sheddingOnTheFleetsHistoryGoesLast(t *testing.T) {
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	r.SetLimit(10)
	linked := breaker.Keyed(r, "linked")
	f, ok := fleet.Of(linked)
	require.True(t, ok)
	m.Add(breaker.DefaultWindow)
	own := f.History()
	require.NoError(t, f.SetOthers(fleet.History{Span: own.Span, Size: own.Size, Newest: own.Newest,
		Buckets: []fleet.Bucket{{Failures: 400}}}))
	s := linked.Stats()
	require.Greater(t, s.DropProbability, 0.5, "the fleet's failures shed")
	for i := range 50 { // every other name is newer and in use
		breaker.Keyed(r, fmt.Sprint("dep-", i))
		breaker.Keyed(r, fmt.Sprint("dep-", i))
	}
	assert.Contains(t, names(r), "linked")

	f.ClearOthers() // it sheds no more and goes as any other
	for i := range 50 {
		breaker.Keyed(r, fmt.Sprint("later-", i))
	}
	assert.NotContains(t, names(r), "linked")
}

func TestRegistry_DefaultLimit(t *testing.T) {
	var r breaker.Registry
	for i := range breaker.DefaultLimit + 1 {
		breaker.Keyed(&r, fmt.Sprint("host-", i))
	}
	n := len(names(&r))
	assert.LessOrEqual(t, n, breaker.DefaultLimit, "the zero Registry is bounded")
	assert.Greater(t, n, breaker.DefaultLimit*8/10)
	assert.Contains(t, names(&r), fmt.Sprint("host-", breaker.DefaultLimit), "the newest stays")

	r.SetLimit(0)
	for i := range breaker.DefaultLimit + 1 {
		breaker.Keyed(&r, fmt.Sprint("more-", i))
	}
	assert.Greater(t, len(names(&r)), breaker.DefaultLimit, "SetLimit(0) removes the bound")
}
