package breaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
)

// fleetOf returns b's fleet link, failing the test if it has none.
func fleetOf(t *testing.T, b breaker.Breaker) *breaker.Fleet {
	t.Helper()
	f, ok := breaker.FleetOf(b)
	require.True(t, ok)
	return f
}

func dropProbability(t *testing.T, b breaker.Breaker) float64 {
	t.Helper()
	s, ok := breaker.StatsOf(b)
	require.True(t, ok)
	return s.DropProbability
}

func TestFleet_Counts_ownWindow(t *testing.T) {
	b, mock := newBreaker(t)
	f := fleetOf(t, b)
	assert.Equal(t, "test", f.Name())
	assert.Equal(t, breaker.DefaultWindow, f.Window())

	succeed(t, b, 3)
	fail(t, b, 2, "boom")
	assert.Equal(t, breaker.Counts{Successes: 3, Failures: 2, ReachSuccesses: 3, ReachFailures: 2}, f.Counts(),
		"no finished bucket yet: no recent run; the reach is the window's")

	mock.Add(breaker.DefaultWindow / breaker.DefaultBuckets)
	fail(t, b, 1, "boom")
	assert.Equal(t, breaker.Counts{Successes: 3, Failures: 3, ReachSuccesses: 3, ReachFailures: 3}, f.Counts(),
		"the finished bucket held both: no run")

	mock.Add(breaker.DefaultWindow)
	assert.Equal(t, breaker.Counts{ReachSuccesses: 3, ReachFailures: 3}, f.Counts(),
		"everything left the window; the breaker still reads back to its evidence")
}

func TestFleet_SetOthers_shedsOnTheFleetsEvidence(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithPlainFormula())
	f := fleetOf(t, b)
	fail(t, b, 2, "boom")
	assert.Equal(t, 0.0, dropProbability(t, b), "2 failures alone are within protection")

	require.NoError(t, f.SetOthers(breaker.Counts{Failures: 40}))
	// (42 − 5 − 1.5·0) / (42 + 1): protection applies once, to the fleet.
	assert.InDelta(t, 37.0/43, dropProbability(t, b), 1e-12)

	f.ClearOthers()
	assert.Equal(t, 0.0, dropProbability(t, b), "cleared: the breaker's own counts alone")
}

func TestFleet_SetOthers_ownEvidenceOutweighsAHealthyFleet(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithPlainFormula())
	f := fleetOf(t, b)
	fail(t, b, 20, "boom")
	own := dropProbability(t, b)
	require.Greater(t, own, 0.5)

	require.NoError(t, f.SetOthers(breaker.Counts{Successes: 1000}))
	assert.InDelta(t, own, dropProbability(t, b), 1e-12, "the higher of the two probabilities")
}

func TestFleet_SetOthers_healthyFleetDropsNothingForAHealthyProcess(t *testing.T) {
	b, _ := newBreaker(t)
	f := fleetOf(t, b)
	succeed(t, b, 10)
	require.NoError(t, f.SetOthers(breaker.Counts{Successes: 500, Failures: 5}))
	assert.Equal(t, 0.0, dropProbability(t, b))
	p, err := b.Allow()
	require.NoError(t, err)
	p.Accept()
}

func TestFleet_SetOthers_staleAfterAWindow(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithPlainFormula())
	f := fleetOf(t, b)
	require.NoError(t, f.SetOthers(breaker.Counts{Failures: 100}))
	assert.Greater(t, dropProbability(t, b), 0.9)

	mock.Add(breaker.DefaultWindow)
	assert.Greater(t, dropProbability(t, b), 0.9, "still fresh exactly one window later")
	mock.Add(time.Millisecond)
	assert.Equal(t, 0.0, dropProbability(t, b), "counts not renewed within a window are dropped")
}

func TestFleet_SetOthers_recentRunsAddUp(t *testing.T) {
	b, _ := newBreaker(t) // trust in recent buckets is on by default
	f := fleetOf(t, b)
	require.NoError(t, f.SetOthers(breaker.Counts{Successes: 100, Failures: 30, RecentFailures: 30}))
	fail(t, b, 1, "boom")
	// The fleet's newest buckets hold only failures, more than protection:
	// older successes are set aside. Without the run, 100 successes would
	// outweigh 31 failures: (31 − 5) / 32, to the power 1/1.5.
	assert.InDelta(t, 0.8707, dropProbability(t, b), 1e-4)
}

func TestFleet_SetOthers_aFleetDownForAWindowLosesProtection(t *testing.T) {
	b, _ := newBreaker(t)
	f := fleetOf(t, b)
	fail(t, b, 1, "boom")
	others := breaker.Counts{Failures: 6, RecentFailures: 6, ReachFailures: 6}
	require.NoError(t, f.SetOthers(others))
	withProtection := dropProbability(t, b)
	others.Down = 1 // one process has been down a window
	require.NoError(t, f.SetOthers(others))
	assert.Greater(t, dropProbability(t, b), withProtection)
}

func TestFleet_SetOthers_invalidCounts(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithPlainFormula())
	f := fleetOf(t, b)
	require.NoError(t, f.SetOthers(breaker.Counts{Failures: 40}))
	before := dropProbability(t, b)

	for _, tc := range []struct {
		name   string
		counts breaker.Counts
		want   string
	}{
		{"negative", breaker.Counts{Successes: -1}, "breaker: invalid fleet counts: Successes -1: must be between 0 and 1125899906842624"},
		{"huge", breaker.Counts{RecentFailures: 1 << 62}, "breaker: invalid fleet counts: RecentFailures 4611686018427387904: must be between 0 and 1125899906842624"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.SetOthers(tc.counts)
			assert.ErrorIs(t, err, breaker.ErrInvalidCounts)
			assert.EqualError(t, err, tc.want)
			assert.Equal(t, before, dropProbability(t, b), "invalid counts change nothing")
		})
	}
}

func TestFleetOf_breakersWithoutALink(t *testing.T) {
	_, ok := breaker.FleetOf(breaker.Nop())
	assert.False(t, ok)
	_, ok = breaker.FleetOf(breaker.NewRegistry().Get("db"))
	assert.True(t, ok, "a registry's breakers have one")
}

func TestFleetOf_linksShareState(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithPlainFormula())
	require.NoError(t, fleetOf(t, b).SetOthers(breaker.Counts{Failures: 40}))
	assert.Greater(t, dropProbability(t, b), 0.0)
	fleetOf(t, b).ClearOthers()
	assert.Equal(t, 0.0, dropProbability(t, b))
}

func TestFleet_Allow_noAllocationsWhileLinked(t *testing.T) {
	b := breaker.MustNew()
	f := fleetOf(t, b)
	require.NoError(t, f.SetOthers(breaker.Counts{Successes: 100, Failures: 3}))
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, err := b.Allow()
		if err == nil {
			p.Accept()
		}
	}))
}

func TestFleet_SetOthers_clockSteppedBack(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithPlainFormula())
	require.NoError(t, fleetOf(t, b).SetOthers(breaker.Counts{Failures: 100}))
	require.Greater(t, dropProbability(t, b), 0.9)
	mock.Add(-time.Minute)
	assert.Equal(t, 0.0, dropProbability(t, b), "counts set before the clock stepped back are not trusted")
}

func TestFleet_SetOthers_callsWithACriticality(t *testing.T) {
	b, _ := newBreaker(t)
	require.NoError(t, fleetOf(t, b).SetOthers(breaker.Counts{Failures: 100, RecentFailures: 100, ReachFailures: 100}))
	ctx := criticality.With(context.Background(), criticality.Sheddable)
	dropped := 0
	for range 20 {
		if p, err := b.AllowCtx(ctx); err != nil {
			dropped++
		} else {
			p.Accept()
		}
	}
	assert.Greater(t, dropped, 10, "a call with a criticality decides on the fleet's counts too")
}

// A breaker with no failures of its own may drop on its fleet's evidence;
// its drops are counted in the window of their time, however long its own
// drops window has stood still.
func TestFleet_SetOthers_dropsOnTheFleetsEvidenceAreCounted(t *testing.T) {
	b, mock := newBreaker(t)
	f := fleetOf(t, b)
	succeed(t, b, 1)
	mock.Add(10 * breaker.DefaultWindow) // the drops window was last moved at the start
	require.NoError(t, f.SetOthers(breaker.Counts{Failures: 400, ReachFailures: 400}))

	dropped := 0
	for range 100 {
		p, err := b.Allow()
		if err != nil {
			dropped++
			continue
		}
		p.Accept()
	}
	require.Greater(t, dropped, 0, "the fleet's failures shed")
	s, ok := breaker.StatsOf(b)
	require.True(t, ok)
	assert.Equal(t, int64(dropped), s.Drops, "every drop is in the window")
	assert.Equal(t, int64(dropped), s.TotalDrops)
}
