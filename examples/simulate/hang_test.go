package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namedConfig is the default configuration running the named scenario at
// its own rate, as -scenario name does.
func namedConfig(t *testing.T, name string) config {
	t.Helper()
	n, ok := namedScenarios[name]
	require.True(t, ok, "no named scenario %q", name)
	cfg := defaultConfig()
	cfg.named, cfg.rate = name, n.rate
	return cfg
}

// simulateNamed runs cfg and returns its result and figures.
func simulateNamed(t *testing.T, cfg config) (*result, figures) {
	t.Helper()
	res, err := simulate(cfg)
	require.NoError(t, err)
	return res, res.figures()
}

// Issue 27: a dependency that hangs (its calls never answer, the client's
// 30 s timeout ends them) was shed only once the timeouts came back, 30 s
// into the hang, with every call of those 30 s in flight. The goals, at the
// breaker's defaults: 90 % dropped, sustained, within 2.5 s of the hang's
// start; at most 800 calls in flight at once; at most 10 % of the hang's
// calls reaching the hung dependency; 95 % admitted, sustained, within 1 s
// of healing, although the hang's calls time out after it healed. At 20
// and 2,000 requests/s, within 3 s, 15 % and 1.5 s.
func TestSimulate_blackholeIsShedBeforeTheTimeouts(t *testing.T) {
	for _, tc := range []struct {
		rate                       int
		shedWithin, admittedWithin float64 // seconds
		reachedAtMost              float64 // % of the hang's calls
		peakInFlightAtMost         int     // 0 for no goal
	}{
		{rate: 200, shedWithin: 2.5, reachedAtMost: 10, admittedWithin: 1, peakInFlightAtMost: 800},
		{rate: 20, shedWithin: 3, reachedAtMost: 15, admittedWithin: 1.5},
		{rate: 2000, shedWithin: 3, reachedAtMost: 15, admittedWithin: 1.5},
	} {
		t.Run(fmt.Sprintf("%d requests/s", tc.rate), func(t *testing.T) {
			cfg := namedConfig(t, "blackhole")
			cfg.rate = tc.rate
			res, f := simulateNamed(t, cfg)
			t.Logf("90 %% shed after %.1f s, %.1f %% reached, 95 %% admitted after %.1f s, peak in flight %d, false drops %v",
				f.shedAfter, f.outageReached, f.admittedAfter, res.peakInFlight, f.falseDrops)
			assert.LessOrEqual(t, f.shedAfter, tc.shedWithin, "seconds from the hang's start until 90 % was dropped, sustained")
			assert.LessOrEqual(t, f.outageReached, tc.reachedAtMost, "% of the hang's calls that reached the hung dependency")
			assert.LessOrEqual(t, f.admittedAfter, tc.admittedWithin, "seconds from healing until 95 % was admitted, sustained")
			if tc.peakInFlightAtMost > 0 {
				assert.LessOrEqual(t, res.peakInFlight, tc.peakInFlightAtMost, "calls in flight at once")
			}
			assert.Equal(t, 0.0, f.falseDrops, "false drops before the hang")
		})
	}
}

// Issue 27: calls that are slow by nature, on a dependency that is healthy,
// are never dropped: a heavy tail (5 ms median, 200 ms p99, 1 s p99.9),
// calls of 1 to 5 s, and long polls answered after 20 s.
func TestSimulate_slowHealthyCallsAreNotDropped(t *testing.T) {
	for _, name := range []string{"heavy-tail", "long-calls", "long-polls"} {
		t.Run(name, func(t *testing.T) {
			res, f := simulateNamed(t, namedConfig(t, name))
			t.Logf("%d calls, peak in flight %d", res.phases[0].offered, res.peakInFlight)
			assert.Equal(t, 0.0, f.falseDrops, "calls dropped while the dependency was healthy")
			assert.Equal(t, 0, res.phases[0].timedOut, "calls timed out")
		})
	}
}

// With the plain formula, which counts only the calls that have finished,
// the black hole is not shed before its first calls time out, 30 s after
// the hang began: until then the breaker has heard of no failure.
func TestSimulate_blackholePlainFormulaWaitsForTheTimeouts(t *testing.T) {
	cfg := namedConfig(t, "blackhole")
	cfg.plain = true
	res, f := simulateNamed(t, cfg)
	hang := res.phaseOf(roleOutage)
	require.Equal(t, 1, hang)
	dropped := 0
	for _, c := range res.slots[hang][:namedTimeout/slot] {
		dropped += c.dropped
	}
	assert.Equal(t, 0, dropped, "calls dropped in the hang's first 30 s")
	assert.Greater(t, f.shedAfter, namedTimeout.Seconds(), "seconds until 90 % was shed")
	assert.GreaterOrEqual(t, res.peakInFlight, 200*30, "the hang's first 30 s of calls, all in flight")
}

// The slowdown (5 ms, then 2 s for 20 s, without an error) at the
// breaker's defaults, with no goal: the test logs what happens, which
// docs/design/behaviour.md reports.
func TestSimulate_slowdownAtTheDefaults(t *testing.T) {
	res, f := simulateNamed(t, namedConfig(t, "slowdown"))
	t.Logf("slow phase: %.1f %% admitted, 90 %% shed after %v s; healed: 95 %% admitted after %v s; peak in flight %d; false drops %v",
		f.outageReached, f.shedAfter, f.admittedAfter, res.peakInFlight, f.falseDrops)
	assert.Equal(t, 0.0, f.falseDrops)
}

// Issue 27: with breaker.WithSlowCall(250ms), a dependency whose calls
// take 2 s rather than 5 ms, without an error, is shed as one that fails:
// 90 % dropped, sustained, within 1.5 s of the slowdown, and 95 %
// admitted, sustained, within 1 s of the latency's return.
func TestSimulate_slowdownWithASlowCallThresholdIsShed(t *testing.T) {
	cfg := namedConfig(t, "slowdown")
	cfg.slowCall = 250 * time.Millisecond
	res, f := simulateNamed(t, cfg)
	t.Logf("slow phase: %.1f %% admitted, 90 %% shed after %v s; healed: 95 %% admitted after %v s; peak in flight %d; false drops %v",
		f.outageReached, f.shedAfter, f.admittedAfter, res.peakInFlight, f.falseDrops)
	assert.LessOrEqual(t, f.shedAfter, 1.5, "seconds from the slowdown's start until 90 % was dropped, sustained")
	assert.LessOrEqual(t, f.admittedAfter, 1.0, "seconds from the latency's return until 95 % was admitted, sustained")
	assert.Equal(t, 0.0, f.falseDrops)
}
