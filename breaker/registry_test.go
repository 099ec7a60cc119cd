package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

func TestRegistry_Get_oneBreakerPerName(t *testing.T) {
	r := breaker.MustNewRegistry()
	a := r.Get("a")
	assert.Same(t, a, r.Get("a"))
	assert.NotSame(t, a, r.Get("b"))
	assert.Equal(t, "a", a.Name())
	assert.Equal(t, "", r.Get("").Name(), "the empty name is a name like any other")
}

func TestRegistry_Get_concurrentFirstUse(t *testing.T) {
	r := breaker.MustNewRegistry()
	const goroutines = 16
	got := make([][]breaker.Breaker, goroutines)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range 50 {
				got[g] = append(got[g], r.Get(fmt.Sprintf("dep-%d", i)))
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range 50 {
		for g := 1; g < goroutines; g++ {
			require.Same(t, got[0][i], got[g][i], "dep-%d: every goroutine sees the same breaker", i)
		}
	}
}

func TestRegistry_optionsApplyToEveryBreaker(t *testing.T) {
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithK(1), breaker.WithProtection(0),
		breaker.WithProba(proba.NewSeeded(3)))
	b := r.Get("db")
	assert.Equal(t, "db", b.Name())
	fail(t, b, 1000, "down")
	assert.Greater(t, dropShare(b, 1000), 0.9, "K 1 and protection 0 shed at once")
	assert.Equal(t, 0.0, dropShare(r.Get("cache"), 1000), "another name has its own window")
}

func TestRegistry_NoBreakerFor(t *testing.T) {
	r := breaker.MustNewRegistry(breaker.WithK(1), breaker.WithProtection(0))
	require.NoError(t, r.NoBreakerFor("legacy"))
	b := r.Get("legacy")
	assert.True(t, b.Stats().Unguarded, "the name has an unguarded breaker")
	assert.True(t, breaker.Keyed(r, "legacy") == b, "for the integrations' calls too")
	assert.Equal(t, "legacy", b.Name())
	fail(t, b, 1000, "down")
	assert.Equal(t, 0.0, dropShare(b, 1000), "an unguarded name never drops")

	require.NoError(t, r.NoBreakerFor("fresh"))
	assert.Equal(t, 0.0, dropShare(r.Get("fresh"), 10))
}

var packageLevelRuns atomic.Int64

func TestPackageLevelFunctions(t *testing.T) {
	// The default registry outlives the test: a fresh name per run keeps -count=N honest.
	name := fmt.Sprintf("package-level-%d", packageLevelRuns.Add(1))
	b := breaker.Get(name)
	assert.Same(t, b, breaker.Get(name))
	ctx := context.Background()
	errBad := errors.New("bad")
	fine := func(err error) bool { return err == nil || errors.Is(err, errBad) }
	fallback := func(err error) error { t.Error("fallback on an admitted call"); return err }
	ok := func() error { return nil }
	bad := func() error { return errBad }

	assert.NoError(t, breaker.Get(name).Do(ok))
	assert.NoError(t, breaker.Get(name).DoCtx(ctx, ok))
	assert.ErrorIs(t, breaker.Get(name).DoWithAcceptable(bad, fine), errBad)
	assert.ErrorIs(t, breaker.Get(name).DoWithAcceptableCtx(ctx, bad, fine), errBad)
	assert.NoError(t, breaker.Get(name).DoWithFallback(ok, fallback))
	assert.NoError(t, breaker.Get(name).DoWithFallbackCtx(ctx, ok, fallback))
	assert.ErrorIs(t, breaker.Get(name).DoWithFallbackAcceptable(bad, fallback, fine), errBad)
	assert.ErrorIs(t, breaker.Get(name).DoWithFallbackAcceptableCtx(ctx, bad, fallback, fine), errBad)
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(8), total)
	assert.Equal(t, int64(8), accepts)

	assert.ErrorIs(t, breaker.DefaultRegistry().NoBreakerFor(name), breaker.ErrInvalidOption,
		"the breaker is in use: it stays")
	assert.Same(t, b, breaker.Get(name))
}

func TestRegistry_Get_existingNameDoesNotAllocate(t *testing.T) {
	r := breaker.MustNewRegistry()
	r.Get("svc")
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { r.Get("svc") }))
}

func TestRegistry_zeroValueHasDefaultOptions(t *testing.T) {
	var r breaker.Registry
	b := r.Get("svc")
	assert.Equal(t, "svc", b.Name())
	assert.Same(t, b, r.Get("svc"))
	assert.NoError(t, b.Do(func() error { return nil }))
}

func TestRegistry_Lookup_makesNothingAndChangesNothing(t *testing.T) {
	r := breaker.MustNewRegistry()
	r.SetLimit(10)
	b, ok := r.Lookup("db")
	assert.False(t, ok)
	assert.Nil(t, b)
	assert.Empty(t, names(r), "a miss makes no breaker")

	db := r.Get("db")
	b, ok = r.Lookup("db")
	require.True(t, ok)
	assert.True(t, db == b, "the breaker Get made")

	host := breaker.Keyed(r, "host-0")
	b, ok = r.Lookup("host-0")
	require.True(t, ok)
	assert.True(t, host == b, "a name from outside is found")
	for i := 1; i <= 10; i++ {
		breaker.Keyed(r, fmt.Sprint("host-", i))
	}
	_, ok = r.Lookup("host-0")
	assert.False(t, ok, "a lookup leaves a name from outside one: it is forgotten past the limit")

	long := strings.Repeat("x", breaker.MaxNameLen+10)
	cut := r.Get(long)
	b, ok = r.Lookup(long)
	require.True(t, ok, "a long name is cut as Get cuts it")
	assert.True(t, cut == b)
}
