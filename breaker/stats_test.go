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
)

func TestStatsOf_countsAndReasons(t *testing.T) {
	b, m := newBreaker(t, breaker.WithName("payments"), breaker.WithPlainFormula(), breaker.WithK(1),
		breaker.WithProtection(0))
	record(t, b, 30, 0)
	m.Add(10 * time.Millisecond)
	record(t, b, 0, 10)

	s := b.Stats()
	assert.Equal(t, "payments", s.Name)
	assert.Equal(t, int64(30), s.Successes)
	assert.Equal(t, int64(10), s.Failures)
	assert.Equal(t, int64(30), s.TotalSuccesses)
	assert.Equal(t, int64(10), s.TotalFailures)
	assert.InDelta(t, 10.0/41, s.DropProbability, 1e-12, "the formula: (40 − 0 − 1·30)/(40 + 1)")
	require.Len(t, s.Reasons, 5)
	assert.Equal(t, "down", s.Reasons[0].Text)
	assert.Equal(t, m.Now(), s.Reasons[0].At)

	m.Add(breaker.DefaultWindow) // everything leaves the window; the totals stay
	s = b.Stats()
	assert.Zero(t, s.Successes+s.Failures+s.Drops)
	assert.Equal(t, int64(30), s.TotalSuccesses)
	assert.Equal(t, int64(10), s.TotalFailures)
	assert.Zero(t, s.DropProbability)
}

func TestStatsOf_dropsAreCounted(t *testing.T) {
	b := dead(t)
	before := b.Stats()
	dropped := 0
	for range 20_000 {
		if _, err := b.Allow(); err != nil {
			dropped++
		}
	}
	s := b.Stats()
	assert.Equal(t, int64(dropped), s.TotalDrops-before.TotalDrops, "every drop counted")
	assert.Equal(t, s.Drops, s.TotalDrops, "the clock stood still: the window holds them all")
	assert.Greater(t, s.DropProbability, 0.9)
}

func TestStatsOf_probabilityMatchesTheDrops(t *testing.T) {
	b, _ := newBreaker(t) // the defaults: aggression, counted drops, trust in recent buckets
	record(t, b, 40, 80)
	dropShare(b, 5000) // let the counted drops settle
	s := b.Stats()
	assert.InDelta(t, s.DropProbability, dropShare(b, 20_000), 0.02)
}

func TestBreaker_Stats_nopIsUnguarded(t *testing.T) {
	s := breaker.Nop().Stats()
	assert.Equal(t, breaker.Stats{Name: "nop", Unguarded: true}, s)
	assert.False(t, breaker.MustNew().Stats().Unguarded)
}

func TestStatsOf_hotPathStaysFreeOfAllocations(t *testing.T) {
	b := breaker.MustNew()
	_ = b.Stats()
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow()
		p.Accept()
	}))
}

func TestStatsOf_concurrentWithCalls(t *testing.T) {
	b, m := newBreaker(t, breaker.WithWindow(time.Hour), breaker.WithBuckets(60))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			succeed(t, b, 2000)
		}()
	}
	for range 100 {
		s := b.Stats()
		assert.LessOrEqual(t, s.Successes, int64(8000))
		m.Add(time.Millisecond)
	}
	wg.Wait()
	s := b.Stats()
	assert.Equal(t, int64(8000), s.Successes)
	assert.Equal(t, int64(8000), s.TotalSuccesses)
}

func TestRegistry_Range(t *testing.T) {
	r := breaker.MustNewRegistry()
	for i := range 50 {
		r.Get(fmt.Sprint("dep-", i))
	}
	r.NoBreakerFor("dep-7")
	var names []string
	r.Range(func(name string, b breaker.Breaker) bool {
		assert.Equal(t, name, b.Name())
		assert.True(t, r.Get(name) == b, "Range may call Get")
		names = append(names, name)
		return true
	})
	sort.Strings(names)
	assert.Len(t, names, 50, "each name once")
	assert.Equal(t, "dep-0", names[0])

	seen := 0
	r.Range(func(string, breaker.Breaker) bool { seen++; return seen < 3 })
	assert.Equal(t, 3, seen, "false stops the iteration")
}
