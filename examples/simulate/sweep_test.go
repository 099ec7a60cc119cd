package main

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRates(t *testing.T) {
	rates, err := parseRates("2,5, 20,200,2000")
	require.NoError(t, err)
	assert.Equal(t, []int{2, 5, 20, 200, 2000}, rates)

	for in, want := range map[string]string{
		"":                              `-rates : "" is not a whole number of requests/s from 1 to 1000000`,
		"2,0":                           `-rates 2,0: "0" is not a whole number of requests/s from 1 to 1000000`,
		"2.5":                           `-rates 2.5: "2.5" is not a whole number of requests/s from 1 to 1000000`,
		"1000001":                       `-rates 1000001: "1000001" is not a whole number of requests/s from 1 to 1000000`,
		"5,,20":                         `-rates 5,,20: "" is not a whole number of requests/s from 1 to 1000000`,
		"1" + strings.Repeat(",1", 100): "-rates 1" + strings.Repeat(",1", 100) + ": 101 rates, at most 100",
	} {
		_, err := parseRates(in)
		assert.EqualError(t, err, want)
	}
}

func TestParseSeeds(t *testing.T) {
	for in, want := range map[string][]uint64{
		"1-5":                  {1, 2, 3, 4, 5},
		"7":                    {7},
		"1,7,10-12":            {1, 7, 10, 11, 12},
		"3-3":                  {3},
		"0":                    {0},
		"18446744073709551615": {math.MaxUint64},
		"18446744073709551614-18446744073709551615": {math.MaxUint64 - 1, math.MaxUint64},
	} {
		seeds, err := parseSeeds(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, seeds, in)
	}
	for in, want := range map[string]string{
		"":                       `-seeds : "" is not a seed (a whole number) or a range of seeds such as 1-5`,
		"a":                      `-seeds a: "a" is not a seed (a whole number) or a range of seeds such as 1-5`,
		"1-":                     `-seeds 1-: "1-" is not a seed (a whole number) or a range of seeds such as 1-5`,
		"5-1":                    `-seeds 5-1: "5-1" runs backwards: write the smaller seed first`,
		"-1":                     `-seeds -1: "-1" is not a seed (a whole number) or a range of seeds such as 1-5`,
		"1-1001":                 "-seeds 1-1001: more than 1000 seeds",
		"0-999,5":                "-seeds 0-999,5: more than 1000 seeds",
		"0-18446744073709551615": "-seeds 0-18446744073709551615: more than 1000 seeds",
	} {
		_, err := parseSeeds(in)
		assert.EqualError(t, err, want, in)
	}
}

func TestParseFlags_sweep(t *testing.T) {
	cfg, err := parseFlags([]string{"-rates", "2,20", "-seeds", "1-3", "-outage", "20s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 20}, cfg.rates)
	assert.Equal(t, []uint64{1, 2, 3}, cfg.seeds)
	assert.Equal(t, 20*time.Second, cfg.phases[outage].length)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rates", "2", "-rate", "10"}, "-rates and -rate: give one; -rates runs each rate in turn"},
		{[]string{"-seeds", "1-2", "-seed", "3"}, "-seeds and -seed: give one; -seeds runs each seed in turn"},
		{[]string{"-rates", "2", "-scenario", "s.json"}, "-rates and -scenario: give one; -rates sets the rate of the built-in scenario, a scenario file brings its own"},
		{[]string{"-seeds", "1-2", "-replay", "t.csv"}, "-seeds and -replay: give one; a trace brings its own traffic"},
		{[]string{"-seeds", "1-2", "-svg", "c.svg"}, "-seeds and -svg: give one; a sweep makes many runs, -svg charts one"},
		{[]string{"-rates", "2", "-record", "r.csv"}, "-rates and -record: give one; a sweep makes many runs, -record writes the trace of one"},
		{[]string{"-rates", "x"}, `-rates x: "x" is not a whole number of requests/s from 1 to 1000000`},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(tc.args, &stderr)
		assert.EqualError(t, err, tc.want)
		assert.Contains(t, stderr.String(), "Usage of simulate", "the usage follows the error")
	}
}

func TestSweep_worstOverTheSeeds(t *testing.T) {
	cfg := defaultConfig()
	rows, err := sweep(cfg, []int{50, 400}, []uint64{1, 2, 3})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, row := range rows {
		require.Len(t, row.runs, 3)
		reached, goodput := 0.0, 100.0
		for i, r := range row.runs {
			c := cfg
			c.rate, c.seed = row.rate, uint64(i+1)
			res, err := simulate(c)
			require.NoError(t, err)
			assert.Equal(t, res.figures(), r.f, "rate %d seed %d is the run -rate and -seed make", row.rate, c.seed)
			reached, goodput = max(reached, r.f.outageReached), min(goodput, r.f.goodput)
		}
		assert.Equal(t, reached, row.f.outageReached)
		assert.Equal(t, goodput, row.f.goodput)
	}
}

func TestRun_sweep(t *testing.T) {
	cfg := defaultConfig()
	cfg.rates, cfg.seeds = []int{20, 2000}, []uint64{1, 2}
	out := runToString(t, cfg)
	assert.Contains(t, out, "breaker: K=1.5 protection=5 window=2s buckets=20 aggression=1.5 drops counted=true trust recent=true evidence=40; "+
		"the built-in scenario (healthy 5s, outage 10s, healed 10s, overload 10s at 50 % capacity; 1 % errors outside the outage); seeds 1–2\n")
	assert.Contains(t, out, "| requests/s, seed | outage reaching the dependency | 90 % shed after (sustained) |")
	assert.Regexp(t, `(?m)^\| 20, seed 2 \| `, out)
	assert.Regexp(t, `(?m)^\| 2000 \| \d+\.\d % \| 0\.2 s \| `, out)

	cfg.quiet = true
	out = runToString(t, cfg)
	assert.NotContains(t, out, "seed 1 |", "-quiet leaves out the rows per seed")
	assert.Equal(t, 2, strings.Count(out, "\n| 20"), "the header's row and the rate's")

	cfg.phases[overload].length = 0
	cfg.seeds = []uint64{7}
	out = runToString(t, cfg)
	assert.Contains(t, out, "; seeds 7\n")
	assert.Regexp(t, `(?m)^\| 2000 \| .* \| – \| – \|$`, out, "no overload phase, no overload figures")
}

func TestRun_sweepScenarioFile(t *testing.T) {
	cfg := defaultConfig()
	cfg.scenarioFile = "testdata/standard.json"
	cfg.seeds = []uint64{1}
	out := runToString(t, cfg)
	assert.Contains(t, out, "; scenario testdata/standard.json; seeds 1\n")
	assert.Contains(t, out, "| file | 1.8 % | 0.2 s | 0.3 s | 0 | 99.0 % | 1.30 |\n")
}
