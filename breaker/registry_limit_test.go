package breaker_test

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
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
	r := breaker.NewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
		breaker.WithK(1), breaker.WithProtection(0))
	before := r.Get("batch")
	require.NoError(t, r.Configure("batch", breaker.WithProtection(1000)))
	batch := r.Get("batch")
	assert.True(t, before != batch, "the breaker made before is replaced")
	assert.Equal(t, "batch", batch.Name())

	fail(t, batch, 500, "down")
	fail(t, r.Get("api"), 500, "down")
	assert.Equal(t, 0.0, dropShare(batch, 1000), "protection 1000 for batch alone")
	assert.Greater(t, dropShare(r.Get("api"), 1000), 0.9, "the registry's options for the rest")

	require.NoError(t, r.Configure("later", breaker.WithProtection(1000)))
	fail(t, r.Get("later"), 500, "down")
	assert.Equal(t, 0.0, dropShare(r.Get("later"), 1000), "options set before the first Get")
}

func TestRegistry_Configure_invalidChangesNothing(t *testing.T) {
	r := breaker.NewRegistry()
	b := r.Get("x")
	err := r.Configure("x", breaker.WithK(0))
	assert.ErrorIs(t, err, breaker.ErrInvalidOption)
	assert.EqualError(t, err, "breaker: invalid option: WithK(0): K must be a finite number of at least 1")
	assert.True(t, b == r.Get("x"))
}

func TestRegistry_SetLimit_evictsTheLeastRecentlyUsed(t *testing.T) {
	m := newMock()
	r := breaker.NewRegistry(breaker.WithClock(m))
	r.SetLimit(10)
	handed := map[string]breaker.Breaker{}
	for i := range 10 {
		name := fmt.Sprint("dep-", i)
		handed[name] = r.Get(name)
		m.Add(time.Second)
	}
	r.Get("dep-0") // used again: the most recent now
	m.Add(time.Second)
	assert.Len(t, names(r), 10)

	r.Get("new") // 11 > 10: the oldest tenth goes, at least one, down to 9
	got := names(r)
	assert.Len(t, got, 9)
	assert.NotContains(t, got, "dep-1")
	assert.NotContains(t, got, "dep-2")
	assert.Contains(t, got, "dep-0")
	assert.Contains(t, got, "new")

	again := r.Get("dep-1")
	assert.True(t, again != handed["dep-1"], "a forgotten name gets a new breaker")
	p, err := handed["dep-1"].Allow()
	require.NoError(t, err, "the forgotten breaker keeps working for whoever holds it")
	p.Accept()
}

func TestRegistry_SetLimit_removed(t *testing.T) {
	r := breaker.NewRegistry()
	r.SetLimit(5)
	r.SetLimit(0)
	for i := range 50 {
		r.Get(fmt.Sprint(i))
	}
	assert.Len(t, names(r), 50)
}

func TestRegistry_SetLimit_shrinks(t *testing.T) {
	r := breaker.NewRegistry()
	for i := range 50 {
		r.Get(fmt.Sprint(i))
	}
	r.SetLimit(20)
	assert.LessOrEqual(t, len(names(r)), 20)
}

func TestRegistry_SetLimit_concurrentLookups(t *testing.T) {
	r := breaker.NewRegistry()
	r.SetLimit(50)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				name := fmt.Sprint("host-", (g*7919+i*31)%500)
				assert.Equal(t, name, r.Get(name).Name())
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, len(names(r)), 50)
}

func TestRegistry_SetLimit_lookupDoesNotAllocate(t *testing.T) {
	r := breaker.NewRegistry()
	r.SetLimit(100)
	r.Get("svc")
	r.Get("svc")
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = r.Get("svc") }))
}

func TestRegistry_SetLimit_one(t *testing.T) {
	r := breaker.NewRegistry()
	r.SetLimit(1)
	for _, name := range []string{"a", "", "b", ""} {
		assert.Equal(t, name, r.Get(name).Name())
		assert.Equal(t, []string{name}, names(r), "the name just looked up is the one kept")
	}
}
