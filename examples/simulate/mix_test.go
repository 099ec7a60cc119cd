package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// TestSimulate_criticalityScenarioMeetsTheGoals runs
// testdata/criticality.json (issue 13) for seeds 1 to 5: 2,000 requests/s,
// the dependency serving 1,000/s for 20 s, the mix 20/40/20/20. Overall the
// goals of the standard scenario hold; per level, CRITICAL_PLUS gets at
// least 99 % of its calls through, CRITICAL at least 95 % of what the
// capacity leaves it once CRITICAL_PLUS is served (all of its calls cannot
// fit: 400 + 800 calls/s against 1,000), and nearly all drops fall on the
// sheddable levels. docs/design/behaviour.md quotes seed 1.
func TestSimulate_criticalityScenarioMeetsTheGoals(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := defaultConfig()
		cfg.scenarioFile, cfg.seed = "testdata/criticality.json", seed
		res, err := simulate(cfg)
		require.NoError(t, err)
		f := res.figures()
		assert.Equal(t, 0.0, f.falseDrops, "seed %d: false drops", seed)
		assert.GreaterOrEqual(t, f.goodput, 99.0, "seed %d: goodput", seed)
		assert.LessOrEqual(t, f.attemptsPerSuccess, breaker.DefaultK, "seed %d: attempts per success", seed)
		// The sheddable levels, which the dependency refuses, are shed on
		// their own count too: fewer attempts than without criticality
		// (1.29 on the standard overload), and than failsafe-go's priority
		// throttler on this scenario (1.30–1.31, bench/cmd/criticality).
		assert.InDelta(t, 1.221, f.attemptsPerSuccess, 0.005, "seed %d: attempts per success", seed)

		p := res.phaseOf(roleOverload)
		require.GreaterOrEqual(t, p, 0)
		lf := res.levelFigures(p)
		assert.GreaterOrEqual(t, lf.succeeded[0], 99.0, "seed %d: CRITICAL_PLUS succeeded", seed)
		assert.GreaterOrEqual(t, lf.ofAttainable[1], 95.0, "seed %d: CRITICAL, of what the capacity left it", seed)
		assert.InDelta(t, 75.0, lf.succeeded[1], 1, "seed %d: CRITICAL succeeded: 600 of its 800 calls/s fit", seed)
		assert.GreaterOrEqual(t, lf.dropShare[2]+lf.dropShare[3], 99.0, "seed %d: drops on the sheddable levels", seed)
		c := res.phases[p]
		// 28–38 CRITICAL calls of 24,000 critical ones, in the overload's
		// second and third tenths of a second, while the newest buckets'
		// drops are counted up and the dependency, its room spent on the
		// first tenth, fails a quarter of CRITICAL's calls too. 0.15 %
		// (36) before the bucket history's rebuild, whose draws fall in
		// another order: seed 4 drops 38 since, though over seeds 1–30 the
		// rebuilt core drops fewer (894 against 931; docs/design/behaviour.md).
		assert.LessOrEqual(t, pct(c.levels[0].dropped+c.levels[1].dropped, c.levels[0].offered+c.levels[1].offered), 0.16,
			"seed %d: critical calls dropped, %%", seed)
	}
}

// TestSimulate_mixKeepsTheOutageShare: with a criticality mix, the share of
// a full outage that reaches the dependency is within a point of that
// without (issue 13), and every level is shed. Readmission, which 1 %
// errors after healing make vary from seed to seed, is as slow at worst.
func TestSimulate_mixKeepsTheOutageShare(t *testing.T) {
	var plainWorst, mixedWorst float64 // seconds until 95 % was admitted, sustained
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := defaultConfig()
		cfg.seed = seed
		plain, err := simulate(cfg)
		require.NoError(t, err)
		cfg.mix = mix{20, 40, 20, 20}
		mixed, err := simulate(cfg)
		require.NoError(t, err)
		assert.InDelta(t, plain.figures().outageReached, mixed.figures().outageReached, 1, "seed %d", seed)
		outage := mixed.phases[mixed.phaseOf(roleOutage)]
		for l, lc := range outage.levels {
			assert.Greater(t, pct(lc.dropped, lc.offered), 80.0, "seed %d: %v shed", seed, levels[l])
		}
		pf, mf := plain.figures(), mixed.figures()
		assert.Equal(t, pf.falseDrops, mf.falseDrops, "seed %d", seed)
		assert.InDelta(t, pf.shedAfter, mf.shedAfter, 0.1, "seed %d", seed)
		plainWorst, mixedWorst = max(plainWorst, pf.admittedAfter), max(mixedWorst, mf.admittedAfter)
	}
	assert.InDelta(t, plainWorst, mixedWorst, 0.1, "95 %% admitted after healing, worst of seeds 1–5")
}

func TestParseMix(t *testing.T) {
	m, err := parseMix("20,40,20,20")
	require.NoError(t, err)
	assert.Equal(t, mix{20, 40, 20, 20}, m)
	assert.Equal(t, "20,40,20,20", m.String())
	m, err = parseMix(" 0.2, 0.4 ,0.2,0.2")
	require.NoError(t, err)
	assert.Equal(t, mix{0.2, 0.4, 0.2, 0.2}, m)
	for in, want := range map[string]string{
		"20,40,20":      "want four weights",
		"20,40,20,x":    "SHEDDABLE weight",
		"20,-1,20,20":   "CRITICAL weight -1",
		"0,0,0,0":       "add up to 0",
		"NaN,1,1,1":     "CRITICAL_PLUS weight NaN",
		"1,1,1,1,1":     "want four weights",
		"":              "want four weights",
		"1e9,1,1,1":     "between 0 and 1,000,000",
		"20,40,20,20,,": "want four weights",
	} {
		_, err := parseMix(in)
		if assert.Error(t, err, "%q", in) {
			assert.Contains(t, err.Error(), want, "%q", in)
		}
	}
}

func TestMixer_spreadsTheLevels(t *testing.T) {
	x := newMixer(mix{20, 40, 20, 20})
	var n [4]int
	for i := range 1000 {
		n[x.next()]++
		if i == 9 {
			assert.Equal(t, [4]int{2, 4, 2, 2}, n, "every 10 calls hold the mix")
		}
	}
	assert.Equal(t, [4]int{200, 400, 200, 200}, n)
}

func TestLevelCapacity_servesTheHighestLevelsFirst(t *testing.T) {
	c := newLevelCapacity(400) // 40 calls per 100 ms slot
	x := newMixer(mix{1, 1, 1, 1})
	var served [4]int
	for i := range 800 { // 80 calls per slot, 20 of each level, for 1 s
		since := time.Duration(i) * slot / 80
		l := x.next()
		if c.takeFor(since, l) && i >= 400 {
			served[l]++
		}
	}
	// Over the last 0.5 s: 100 calls of each level offered, 200 served.
	assert.Equal(t, 100, served[0], "CRITICAL_PLUS served whole")
	assert.GreaterOrEqual(t, served[1], 95, "CRITICAL served nearly whole")
	assert.LessOrEqual(t, served[2]+served[3], 5, "nothing left for the sheddable levels")
	assert.InDelta(t, 200, served[0]+served[1]+served[2]+served[3], 2, "the capacity is used")
}

func TestParseScenario_mix(t *testing.T) {
	s, err := parseScenario(strings.NewReader(`{"mix": [1, 2, 3, 4], "phases": [{"duration": "1s", "rate": 10}]}`))
	require.NoError(t, err)
	assert.Equal(t, mix{1, 2, 3, 4}, s.mix)
	for in, want := range map[string]string{
		`{"mix": [1, 2, 3], "phases": [{"duration": "1s", "rate": 10}]}`:     "mix: 3 weights",
		`{"mix": [0, 0, 0, 0], "phases": [{"duration": "1s", "rate": 10}]}`:  "add up to 0",
		`{"mix": [1, -2, 0, 0], "phases": [{"duration": "1s", "rate": 10}]}`: "CRITICAL weight -2",
	} {
		_, err := parseScenario(strings.NewReader(in))
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want)
		}
	}
}

func TestRun_mix(t *testing.T) {
	var stderr bytes.Buffer
	_, err := parseFlags([]string{"-mix", "20,40,20,20", "-replay", "x.csv"}, &stderr)
	assert.Error(t, err, "-mix with -replay")
	_, err = parseFlags([]string{"-mix", "1,2"}, &stderr)
	assert.Error(t, err)

	cfg, err := parseFlags([]string{"-mix", "20,40,20,20", "-quiet"}, &stderr)
	require.NoError(t, err)
	svg := filepath.Join(t.TempDir(), "chart.svg")
	cfg.svgFile = svg
	var out bytes.Buffer
	require.NoError(t, run(cfg, &out, &stderr))
	assert.Contains(t, out.String(), "criticality mix 20,40,20,20")
	assert.Contains(t, out.String(), "overload: CRITICAL_PLUS  succeeded")
	chart, err := os.ReadFile(svg)
	require.NoError(t, err)
	for _, s := range levelSeries {
		assert.Contains(t, string(chart), `id="`+s.id+`"`)
	}

	// The scenario file's mix, replaced by the flag's.
	cfg, err = parseFlags([]string{"-scenario", "testdata/criticality.json", "-mix", "0,0,0,1", "-quiet"}, &stderr)
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, run(cfg, &out, &stderr))
	assert.Contains(t, out.String(), "criticality mix 0,0,0,1")

	// Without a mix, no per-level figures.
	cfg, err = parseFlags([]string{"-quiet"}, &stderr)
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, run(cfg, &out, &stderr))
	assert.NotContains(t, out.String(), "CRITICAL")
}

// TestSimulate_criticalityFIFO runs testdata/criticality-fifo.json for
// seeds 1 to 5: the criticality scenario against a dependency that serves
// first come, first served (it does not read the criticality), the levels
// of each 100 ms slot in a seeded random order. The dependency fails the
// calls beyond its capacity whatever their level, so a critical call
// succeeds as often as any admitted call: the breaker keeps every critical
// call and sheds from SHEDDABLE up, and the fewer attempts per success,
// the more of the critical calls succeed. docs/design/behaviour.md quotes these
// figures beside failsafe-go's (bench/cmd/criticality -fifo -shuffle).
func TestSimulate_criticalityFIFO(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := defaultConfig()
		cfg.scenarioFile, cfg.seed = "testdata/criticality-fifo.json", seed
		res, err := simulate(cfg)
		require.NoError(t, err)
		f := res.figures()
		assert.Equal(t, 0.0, f.falseDrops, "seed %d: false drops", seed)
		assert.GreaterOrEqual(t, f.goodput, 99.9, "seed %d: goodput", seed)
		assert.InDelta(t, 1.285, f.attemptsPerSuccess, 0.005, "seed %d: attempts per success", seed)

		p := res.phaseOf(roleOverload)
		require.GreaterOrEqual(t, p, 0)
		c := res.phases[p]
		assert.LessOrEqual(t, c.levels[0].dropped+c.levels[1].dropped, 1, "seed %d: critical calls dropped", seed)
		lf := res.levelFigures(p)
		assert.InDelta(t, 77.8, lf.succeeded[0], 1, "seed %d: CRITICAL_PLUS succeeded", seed)
		assert.InDelta(t, 78.1, lf.succeeded[1], 1, "seed %d: CRITICAL succeeded", seed)
		assert.InDelta(t, 15.6, lf.succeeded[2], 1, "seed %d: SHEDDABLE_PLUS succeeded", seed)
		assert.InDelta(t, 0.3, lf.succeeded[3], 0.2, "seed %d: SHEDDABLE succeeded", seed)
		assert.InDelta(t, 55.6, lf.dropShare[3], 1, "seed %d: SHEDDABLE's share of the drops", seed)
	}
}

func TestMixer_deal_shufflesEachSlotInTheMixsProportions(t *testing.T) {
	x := newMixer(mix{20, 40, 20, 20})
	x.shuffle = rand.New(rand.NewPCG(1, 2))
	even := newMixer(mix{20, 40, 20, 20})
	same := true
	for range 5 {
		x.deal(200)
		var n [4]int
		for range 200 {
			l := x.next()
			n[l]++
			same = same && l == even.next()
		}
		assert.Equal(t, [4]int{40, 80, 40, 40}, n, "each slot holds the mix")
	}
	assert.False(t, same, "the order is not the even one")
	assert.Equal(t, 200, slotCalls(phase{length: time.Second, rate: 2000}, 0))
	assert.Equal(t, 1, slotCalls(phase{length: time.Second, rate: 2000}, 199), "the slot's last call")
	assert.Equal(t, 3, slotCalls(phase{length: time.Second, rate: 25}, 0), "0, 40 and 80 ms")
}

func TestParseScenario_fifoAndShuffle(t *testing.T) {
	s, err := parseScenario(strings.NewReader(`{"mix": [1, 2, 3, 4], "fifo": true, "shuffle": true,
		"phases": [{"duration": "1s", "rate": 10}]}`))
	require.NoError(t, err)
	assert.True(t, s.fifo)
	assert.True(t, s.shuffle)
	_, err = parseScenario(strings.NewReader(`{"fifo": true, "phases": [{"duration": "1s", "rate": 10}]}`))
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "give a mix too")
	}
	var stderr bytes.Buffer
	cfg, err := parseFlags([]string{"-shuffle", "-quiet"}, &stderr)
	require.NoError(t, err)
	assert.ErrorContains(t, run(cfg, &bytes.Buffer{}, &stderr), "give a mix too")

	// The flags add to a scenario file's.
	cfg, err = parseFlags([]string{"-scenario", "testdata/criticality.json", "-fifo", "-shuffle", "-quiet"}, &stderr)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run(cfg, &out, &stderr))
	assert.Contains(t, out.String(), "shuffled per 100 ms; the dependency serves first come, first served")
}
