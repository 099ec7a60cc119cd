package breaker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/proba"
)

var levels = []criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}

func TestCriticality_String(t *testing.T) {
	assert.Equal(t, "CRITICAL_PLUS", criticality.CriticalPlus.String())
	assert.Equal(t, "CRITICAL", criticality.Critical.String())
	assert.Equal(t, "SHEDDABLE_PLUS", criticality.SheddablePlus.String())
	assert.Equal(t, "SHEDDABLE", criticality.Sheddable.String())
	assert.Equal(t, "Level(7)", criticality.Level(7).String())
	assert.Equal(t, criticality.Critical, criticality.Default)
	var zero criticality.Level
	assert.Equal(t, criticality.Default, zero, "the zero value is the default")
}

func TestParseCriticality(t *testing.T) {
	for _, c := range levels {
		got, err := criticality.Parse(c.String())
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	got, err := criticality.Parse("sheddable_plus")
	require.NoError(t, err)
	assert.Equal(t, criticality.SheddablePlus, got, "any case")
	for _, bad := range []string{"", "CRITICAL ", "1", "critical-plus", "\xff", string(make([]byte, 1000))} {
		got, err := criticality.Parse(bad)
		assert.Error(t, err, "%q", bad)
		assert.Equal(t, criticality.Default, got, "%q", bad)
		assert.Less(t, len(err.Error()), 250, "the error quotes a bounded part of the value")
	}
}

func TestWithCriticality(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, criticality.Default, criticality.From(ctx))
	//lint:ignore SA1012 a nil context on purpose
	assert.Equal(t, criticality.Default, criticality.From(nil))
	for _, c := range levels {
		assert.Equal(t, c, criticality.From(criticality.With(ctx, c)))
	}
	inner := criticality.With(criticality.With(ctx, criticality.Sheddable), criticality.CriticalPlus)
	assert.Equal(t, criticality.CriticalPlus, criticality.From(inner), "the innermost wins")
	assert.Equal(t, criticality.Default,
		criticality.From(criticality.With(ctx, criticality.Level(9))), "not a level")
	//lint:ignore SA1012 a nil context on purpose
	assert.Equal(t, criticality.Sheddable, criticality.From(criticality.With(nil, criticality.Sheddable)))
}

// overloaded drives b through buckets of 100 ms, each offering 100 calls
// mixed 20/40/20/20 (CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE)
// through AllowCtx, to a dependency that serves capacity calls per bucket
// and fails the rest. It returns the calls offered and dropped per level
// over the last half of the buckets.
func overloaded(t *testing.T, b breaker.Breaker, m interface{ Add(time.Duration) }, buckets, capacity int) (
	offered, dropped map[criticality.Level]int) {
	t.Helper()
	mix := []criticality.Level{}
	for i, n := range []int{20, 40, 20, 20} {
		for range n {
			mix = append(mix, levels[i])
		}
	}
	// Interleave the levels within a bucket.
	order := make([]criticality.Level, 0, len(mix))
	for i := range 20 {
		for j := i; j < len(mix); j += 20 {
			order = append(order, mix[j])
		}
	}
	ctxs := map[criticality.Level]context.Context{}
	for _, c := range levels {
		ctxs[c] = criticality.With(context.Background(), c)
	}
	offered, dropped = map[criticality.Level]int{}, map[criticality.Level]int{}
	for bucket := range buckets {
		served := 0
		for _, c := range order {
			p, err := b.AllowCtx(ctxs[c])
			if bucket >= buckets/2 {
				offered[c]++
			}
			if err != nil {
				if bucket >= buckets/2 {
					dropped[c]++
				}
				continue
			}
			if served < capacity {
				served++
				p.Accept()
			} else {
				p.Reject("overloaded")
			}
		}
		m.Add(100 * time.Millisecond)
	}
	return offered, dropped
}

func TestBreaker_AllowCtx_dropsLowestLevelsFirst(t *testing.T) {
	b, m := newBreaker(t)
	offered, dropped := overloaded(t, b, m, 60, 50)
	total := 0
	for _, c := range levels {
		total += dropped[c]
	}
	require.Greater(t, total, 0, "the overload is shed")
	assert.Equal(t, 0, dropped[criticality.CriticalPlus], "CRITICAL_PLUS")
	assert.Equal(t, 0, dropped[criticality.Critical], "CRITICAL")
	assert.Greater(t, dropped[criticality.Sheddable], dropped[criticality.SheddablePlus], "SHEDDABLE before SHEDDABLE_PLUS")
	assert.Greater(t, float64(dropped[criticality.Sheddable])/float64(offered[criticality.Sheddable]), 0.9)

	// The same overload without criticality drops as many calls, at random.
	plain, pm := newBreaker(t)
	_, plainDropped := overloadedPlain(t, plain, pm, 60, 50)
	assert.InDelta(t, plainDropped, total, 0.1*float64(plainDropped), "the formula's share is kept")
}

// overloadedPlain is overloaded through Allow, returning the calls offered
// and dropped over the last half.
func overloadedPlain(t *testing.T, b breaker.Breaker, m interface{ Add(time.Duration) }, buckets, capacity int) (
	offered, dropped int) {
	t.Helper()
	for bucket := range buckets {
		served := 0
		for range 100 {
			p, err := b.Allow()
			if bucket >= buckets/2 {
				offered++
			}
			if err != nil {
				if bucket >= buckets/2 {
					dropped++
				}
				continue
			}
			if served < capacity {
				served++
				p.Accept()
			} else {
				p.Reject("overloaded")
			}
		}
		m.Add(100 * time.Millisecond)
	}
	return offered, dropped
}

func TestBreaker_AllowCtx_outageShedsEveryLevel(t *testing.T) {
	b, m := newBreaker(t)
	offered, dropped := overloaded(t, b, m, 40, 0)
	for _, c := range levels {
		assert.Greater(t, float64(dropped[c])/float64(offered[c]), 0.5, "%v", c)
	}
	var off, drop int
	for _, c := range levels {
		off += offered[c]
		drop += dropped[c]
	}
	plain, pm := newBreaker(t)
	plainOffered, plainDropped := overloadedPlain(t, plain, pm, 40, 0)
	assert.InDelta(t, float64(plainOffered-plainDropped)/float64(plainOffered), float64(off-drop)/float64(off), 0.01,
		"the share reaching a dead dependency is the formula's")
}

func TestBreaker_AllowCtx_defaultLevelDropsAsAllow(t *testing.T) {
	// Calls whose context names no level, or the default, draw exactly as
	// Allow does: same seed, same drops.
	drops := func(ask func(b breaker.Breaker) error) []bool {
		b, _ := newBreaker(t, breaker.WithK(1), breaker.WithProtection(0))
		record(t, b, 30, 70)
		var out []bool
		for range 500 {
			out = append(out, ask(b) != nil)
		}
		return out
	}
	want := drops(func(b breaker.Breaker) error { _, err := b.Allow(); return err })
	assert.Contains(t, want, true)
	assert.Contains(t, want, false)
	assert.Equal(t, want, drops(func(b breaker.Breaker) error { _, err := b.AllowCtx(context.Background()); return err }))
	ctx := criticality.With(context.Background(), criticality.Default)
	assert.Equal(t, want, drops(func(b breaker.Breaker) error { _, err := b.AllowCtx(ctx); return err }))
	ok := func() error { return nil }
	want = drops(func(b breaker.Breaker) error { return b.Do(ok) })
	assert.Equal(t, want, drops(func(b breaker.Breaker) error { return b.DoCtx(ctx, ok) }))
}

func TestBreaker_DoCtx_readsTheCriticality(t *testing.T) {
	b, m := newBreaker(t)
	overloaded(t, b, m, 30, 50) // shedding SHEDDABLE now
	shed := criticality.With(context.Background(), criticality.Sheddable)
	keep := criticality.With(context.Background(), criticality.CriticalPlus)
	ran := 0
	req := func() error { ran++; return nil }
	for range 100 {
		_ = b.DoCtx(keep, req)
	}
	assert.Equal(t, 100, ran, "CRITICAL_PLUS runs")
	ran = 0
	for range 100 {
		_ = b.DoWithFallbackAcceptableCtx(shed, req, func(err error) error { return err }, nil)
	}
	assert.Less(t, ran, 20, "SHEDDABLE is dropped")
	_, err := breaker.Call(shed, b, func(context.Context) (int, error) { return 1, nil })
	assert.ErrorIs(t, err, breaker.ErrServiceUnavailable, "Call reads it too")
}

func TestStats_criticalities(t *testing.T) {
	b, m := newBreaker(t)
	s := b.Stats()
	for i, c := range levels {
		assert.Equal(t, c, s.Criticalities[i].Level, "highest first")
	}
	succeed(t, b, 10)
	s = b.Stats()
	assert.Equal(t, criticality.Stats{Level: criticality.Critical, Calls: 10, Successes: 10, TotalSuccesses: 10},
		s.Criticalities[1], "calls without a level count at the default")
	assert.False(t, s.Leveled(), "no call named a level")

	overloaded(t, b, m, 20, 50)
	s = b.Stats()
	cp, c, sp, sh := s.Criticalities[0], s.Criticalities[1], s.Criticalities[2], s.Criticalities[3]
	// The window holds the last 19 buckets and the current, empty one.
	assert.Equal(t, int64(380), cp.Calls, "20 CRITICAL_PLUS calls per 100 ms")
	assert.Equal(t, int64(380), sp.Calls)
	assert.Equal(t, int64(380), sh.Calls)
	assert.Equal(t, int64(760), c.Calls, "CRITICAL, counted from what the others leave")
	assert.Equal(t, int64(0), cp.Drops)
	assert.Equal(t, s.Drops, cp.Drops+c.Drops+sp.Drops+sh.Drops, "the levels' drops add up")
	assert.Greater(t, sh.Drops, sp.Drops)
	assert.Equal(t, 0.0, cp.DropProbability)
	assert.Greater(t, sh.DropProbability, 0.9)
	assert.Greater(t, s.DropProbability, 0.0)
}

func TestStats_criticalitiesSinceTheBreakerWasMade(t *testing.T) {
	b, m := newBreaker(t)
	succeed(t, b, 10)
	fail(t, b, 2, "x")
	s := b.Stats()
	assert.False(t, s.Leveled())
	// A call at the default level through a context is a call without a level.
	p, err := b.AllowCtx(criticality.With(context.Background(), criticality.Critical))
	require.NoError(t, err)
	p.Accept()
	s = b.Stats()
	assert.False(t, s.Leveled(), "CRITICAL is the default")

	_, dropped := overloaded(t, b, m, 40, 50) // 100 calls per bucket: 20, 40, 20 and 20 per level
	m.Add(time.Minute)                        // every call leaves the window; the totals stay
	s = b.Stats()
	require.True(t, s.Leveled())
	var sum criticality.Stats
	for i, c := range s.Criticalities {
		assert.Equal(t, int64(0), c.Successes+c.Failures+c.Drops, "%v: the window is empty", c.Level)
		assert.GreaterOrEqual(t, c.TotalDrops, int64(dropped[levels[i]]), "%v: the last 20 buckets' drops and more",
			c.Level)
		sum.TotalSuccesses += c.TotalSuccesses
		sum.TotalFailures += c.TotalFailures
		sum.TotalDrops += c.TotalDrops
	}
	assert.Equal(t, s.TotalSuccesses, sum.TotalSuccesses, "the levels add up to the breaker")
	assert.Equal(t, s.TotalFailures, sum.TotalFailures)
	assert.Equal(t, s.TotalDrops, sum.TotalDrops)
	calls := func(c criticality.Stats) int64 { return c.TotalSuccesses + c.TotalFailures + c.TotalDrops }
	assert.Equal(t, int64(40*20), calls(s.Criticalities[0]), "CRITICAL_PLUS")
	assert.Equal(t, int64(40*40+13), calls(s.Criticalities[1]), "CRITICAL: the 40 buckets' and the 13 without a level")
	assert.Equal(t, int64(40*20), calls(s.Criticalities[2]), "SHEDDABLE_PLUS")
	assert.Equal(t, int64(40*20), calls(s.Criticalities[3]), "SHEDDABLE")
	assert.Equal(t, int64(0), s.Criticalities[0].TotalDrops, "CRITICAL_PLUS is never dropped here")
	assert.Greater(t, s.Criticalities[3].TotalDrops, s.Criticalities[2].TotalDrops, "SHEDDABLE first")
}

// The default level's totals are derived from the breaker's; while calls
// at other levels report, a snapshot may catch one between its two
// records, and the default level's totals must still never go back, as a
// Prometheus or OpenTelemetry counter must not.
func TestStats_criticalitiesTotalsOnlyGrow(t *testing.T) {
	b := breaker.MustNew(breaker.WithProba(proba.NewSeeded(1)))
	ctxs := make([]context.Context, len(levels))
	for i, c := range levels {
		ctxs[i] = criticality.With(context.Background(), c)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				p, err := b.AllowCtx(ctxs[(g+i)%len(ctxs)])
				if err != nil {
					continue
				}
				if i%3 == 0 {
					p.Reject("x")
				} else {
					p.Accept()
				}
			}
		}()
	}
	var last [4]criticality.Stats
	for range 2000 {
		s := b.Stats()
		for i, c := range s.Criticalities {
			if c.TotalSuccesses < last[i].TotalSuccesses || c.TotalFailures < last[i].TotalFailures ||
				c.TotalDrops < last[i].TotalDrops {
				t.Fatalf("%v went back: %+v after %+v", c.Level, c, last[i])
			}
			last[i] = c
		}
	}
	close(done)
	wg.Wait()
	s := b.Stats()
	var successes, failures int64
	for _, c := range s.Criticalities {
		successes += c.TotalSuccesses
		failures += c.TotalFailures
	}
	assert.Equal(t, s.TotalSuccesses, successes, "at rest, the levels add up to the breaker")
	assert.Equal(t, s.TotalFailures, failures)
}

func TestBreaker_AllowCtx_criticalityAllocatesNothing(t *testing.T) {
	b := breaker.MustNew(breaker.WithProba(proba.NewSeeded(1)))
	ctx := criticality.With(context.Background(), criticality.SheddablePlus)
	p, _ := b.AllowCtx(ctx) // makes the per-level windows
	p.Accept()
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, _ := b.AllowCtx(ctx)
		p.Accept()
	}), "AllowCtx + Accept at a level")
	ok := func() error { return nil }
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = b.DoCtx(ctx, ok) }), "DoCtx at a level")
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow()
		p.Accept()
	}), "Allow + Accept once levels are in use")
}

func TestBreaker_AllowCtx_levelTheDependencyShedsIsShedOnItsOwn(t *testing.T) {
	// A dependency that sheds the sheddable levels itself, as a server that
	// reads the criticality does, and serves the others: the breaker sheds
	// those levels as it would a failing dependency, rather than spend its K
	// attempts per success on calls bound to fail.
	b, m := newBreaker(t)
	order := []criticality.Level{}
	for range 20 {
		order = append(order, criticality.CriticalPlus, criticality.Critical, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable)
	}
	ctxs := map[criticality.Level]context.Context{}
	for _, c := range levels {
		ctxs[c] = criticality.With(context.Background(), c)
	}
	admitted := map[criticality.Level]int{}
	var allowed, succeeded int
	for bucket := range 60 {
		for _, c := range order {
			p, err := b.AllowCtx(ctxs[c])
			if err != nil {
				continue
			}
			if bucket >= 30 {
				admitted[c]++
				allowed++
			}
			if c >= criticality.Critical {
				p.Accept()
				if bucket >= 30 {
					succeeded++
				}
			} else {
				p.Reject("shed by the server")
			}
		}
		m.Add(100 * time.Millisecond)
	}
	assert.Equal(t, 30*20, admitted[criticality.CriticalPlus])
	assert.Equal(t, 30*40, admitted[criticality.Critical])
	assert.Less(t, admitted[criticality.SheddablePlus]+admitted[criticality.Sheddable], 30*40/10,
		"less than a tenth of the sheddable calls are sent")
	assert.Less(t, float64(allowed)/float64(succeeded), 1.1, "attempts per success")
	s := b.Stats()
	assert.Greater(t, s.Criticalities[2].DropProbability, 0.9, "SHEDDABLE_PLUS")
	assert.Greater(t, s.Criticalities[2].Failures, int64(0))
	assert.Equal(t, int64(0), s.Criticalities[2].Successes)
}
