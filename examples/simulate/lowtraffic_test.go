package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lowTrafficConfig is the scenario of issue 12: healthy for 10 s at 1 %
// errors, down for 20 s, healed for 20 s, overloaded for 20 s at half
// capacity; since issue 20, the healed and overloaded dependency fails 1 %
// of the calls it serves, as it did while healthy.
func lowTrafficConfig() config {
	cfg := defaultConfig()
	cfg.phases[healthy].length = 10 * time.Second
	cfg.phases[outage].length = 20 * time.Second
	cfg.phases[healed].length = 20 * time.Second
	cfg.phases[overload].length = 20 * time.Second
	return cfg
}

// lowTrafficGoal is a row of the goal table of docs/design/behaviour.md: the
// worst of seeds 1–5 at a rate must meet it. NaN-free: a goal of +Inf or 0
// stands for none.
type lowTrafficGoal struct {
	rate          int
	outageReached float64 // % at most
	admittedAfter float64 // seconds at most
	goodput       float64 // % of what the dependency could serve without error, at least
	attempts      float64 // per success, at most
}

// Regression test for issue 12: the defaults shed an outage at the rates
// most services call a dependency at, not only at thousands of calls a
// second, without false drops, and without giving up the overload figures.
// The timings are sustained (3 slots with calls in a row).
func TestSweep_lowTrafficGoals(t *testing.T) {
	k := breaker.DefaultK
	goals := []lowTrafficGoal{
		// No overload goal at 2/s: admitting every call gives about 2.2
		// attempts per success (-evidence 0: 2.22).
		{rate: 2, outageReached: 40, admittedAfter: 5, goodput: 0, attempts: 2.25},
		// The goal is K attempts per success at 5 and 20 requests/s; the
		// defaults reach 1.65 and 1.57 (see docs/design/behaviour.md): bounded here
		// so that a change for the worse shows. At 20 requests/s 1.57
		// since the outage's calls are paced (1.54 before): the pace is
		// idle under the overload, but the calls it lets through in the
		// outage move the simulated dependency's draws; seeds 1–20 give
		// 1.510 on average, 1.506 with the pace measured out.
		{rate: 5, outageReached: 20, admittedAfter: 5, goodput: 95, attempts: 1.66},
		{rate: 20, outageReached: 10, admittedAfter: 2, goodput: 98, attempts: 1.58},
		// 0.5 s to readmit 95 % (issue 20's too), with 1 % errors after
		// healing: the defaults take 0.3 s and 0.2 s.
		{rate: 200, outageReached: 5, admittedAfter: 0.5, goodput: 99, attempts: k},
		{rate: 2000, outageReached: 5, admittedAfter: 0.5, goodput: 99, attempts: k},
	}
	errorRate := lowTrafficConfig().errorRate
	rates := make([]int, len(goals))
	for i, g := range goals {
		rates[i] = g.rate
	}
	rows, err := sweep(lowTrafficConfig(), rates, []uint64{1, 2, 3, 4, 5})
	require.NoError(t, err)
	for i, g := range goals {
		f := rows[i].f
		at := fmt.Sprintf("%d requests/s, worst of seeds 1–5", g.rate)
		assert.Equal(t, 0.0, f.falseDrops, "false drops while healthy, %s", at)
		assert.LessOrEqual(t, f.outageReached, g.outageReached, "%% of the outage that reached the dependency, %s", at)
		assert.LessOrEqual(t, f.admittedAfter, g.admittedAfter, "seconds until 95 %% was admitted after healing, sustained, %s", at)
		assert.GreaterOrEqual(t, f.goodput, g.goodput*(1-errorRate), "%% of capacity served while overloaded, %s", at)
		assert.LessOrEqual(t, f.attemptsPerSuccess, g.attempts, "attempts per success while overloaded, %s", at)
	}
}

// The evidence of light traffic changes nothing for a dependency that
// fails well inside the formula's boundary: at 20 requests/s and 20 %
// errors for 10 minutes, under 0.1 % of the calls are dropped.
func TestSimulate_failingWithinTheBoundary(t *testing.T) {
	cfg := defaultConfig()
	cfg.scenarioFile = "testdata/failing-20.json"
	for seed := uint64(1); seed <= 5; seed++ {
		cfg.seed = seed
		res, err := simulate(cfg)
		require.NoError(t, err)
		c := res.phases[0]
		require.Equal(t, 12_000, c.offered)
		// Seed 5 drops 4 calls (0.03 %), the others none.
		assert.Less(t, pct(c.dropped, c.offered), 0.1, "seed %d: %d dropped", seed, c.dropped)
	}
	cfg.seed = 1
	res, err := simulate(cfg)
	require.NoError(t, err)
	assert.Equal(t, 0, res.phases[0].dropped, "seed 1, the figure docs/design/behaviour.md quotes")
	cfg.seed = 5
	res, err = simulate(cfg)
	require.NoError(t, err)
	assert.Equal(t, 4, res.phases[0].dropped, "seed 5, the worst, which docs/design/behaviour.md quotes")
	cfg.plain = true
	res, err = simulate(cfg)
	require.NoError(t, err)
	assert.Equal(t, 1, res.phases[0].dropped, "the plain formula, seed 5")
}

// With WithEvidence off, the defaults are what they were before issue 12:
// the figures docs/design/behaviour.md gives as "before".
func TestSweep_lowTrafficWithoutEvidence(t *testing.T) {
	cfg := lowTrafficConfig()
	cfg.evidence = 0
	rows, err := sweep(cfg, []int{2, 20}, []uint64{1})
	require.NoError(t, err)
	assert.Equal(t, 100.0, rows[0].f.outageReached, "2 requests/s: nothing shed")
	assert.InDelta(t, 28.5, rows[1].f.outageReached, 0.05)
}
