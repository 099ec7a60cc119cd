package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runToString(t *testing.T, cfg config) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, run(cfg, &out, io.Discard))
	return out.String()
}

func TestRun_sameSeedSameOutput(t *testing.T) {
	cfg := defaultConfig()
	a, b := runToString(t, cfg), runToString(t, cfg)
	assert.Equal(t, a, b)
	cfg.seed = 2
	assert.NotEqual(t, a, runToString(t, cfg), "another seed draws other outcomes")
}

func TestSimulate_defaultScenario(t *testing.T) {
	res, err := simulate(defaultConfig())
	require.NoError(t, err)
	assert.Len(t, res.seconds, 35)

	h := res.phases[healthy]
	assert.Equal(t, 10_000, h.offered)
	assert.Equal(t, 0, h.dropped, "no false drops while healthy")

	o := res.phases[outage]
	assert.Less(t, pct(o.allowed, o.offered), 80.0, "the outage is partly shed")
	_, shed := res.sustainedFrom(outage, func(c counts) bool { return pct(c.dropped, c.offered) >= 90 })
	assert.True(t, shed, "90% is shed before the outage ends")

	_, recovered := res.sustainedFrom(healed, func(c counts) bool { return pct(c.allowed, c.offered) >= 95 })
	assert.True(t, recovered, "traffic recovers before the healed phase ends")
	last := res.seconds[24] // the last healed second
	assert.Equal(t, 0, last.dropped)

	ov := res.phases[overload]
	assert.Equal(t, 20_000, ov.offered)
	assert.LessOrEqual(t, ov.succeeded, 10_000, "the dependency serves at most half")
	assert.Greater(t, ov.succeeded, 9_000)
}

func TestRun_quietPrintsOnlyTheSummary(t *testing.T) {
	cfg := defaultConfig()
	cfg.quiet = true
	out := runToString(t, cfg)
	assert.NotContains(t, out, "second  phase")
	assert.Contains(t, out, "outage:   share that reached the dependency")
}

func TestRun_skippedPhases(t *testing.T) {
	cfg := defaultConfig()
	cfg.phases[outage].length = 0
	cfg.phases[overload].length = 0
	out := runToString(t, cfg)
	assert.NotContains(t, out, "outage")
	assert.NotContains(t, out, "overload")
	assert.Len(t, regexp.MustCompile(`(?m)^ +\d+  `).FindAllString(out, -1), 15, "one line per simulated second")
}

func TestRun_invalidConfig(t *testing.T) {
	for _, tc := range []struct {
		change func(*config)
		want   string
	}{
		{func(c *config) { c.rate = 0 }, "-rate 0: must be between 1 and 1000000"},
		{func(c *config) { c.errorRate = 1.5 }, "-errors 1.5: must be between 0 and 1"},
		{func(c *config) { c.capacity = -0.1 }, "-capacity -0.1: must be between 0 and 1"},
		{func(c *config) { c.phases[outage].length = -time.Second }, "-outage -1s: must not be negative"},
		{func(c *config) { c.phases[healed].length = 25 * time.Hour }, "phases add up to 25h0m25s: at most 24h can be simulated"},
		{func(c *config) { c.rate = 1_000_000; c.phases[healthy].length = 3 * time.Hour },
			"-rate 1000000 over 3h0m30s makes 10830000000 requests: at most 100000000 can be simulated"},
		{func(c *config) { c.k = 0.5 }, "breaker: invalid option: WithK(0.5): K must be a finite number of at least 1"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			cfg := defaultConfig()
			tc.change(&cfg)
			var out bytes.Buffer
			assert.EqualError(t, run(cfg, &out, io.Discard), tc.want)
			assert.Empty(t, out.String())
		})
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-k", "2", "-scenario", "s.json", "-svg", "c.svg", "-record", "r.csv", "-quiet"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 2.0, cfg.k)
	assert.Equal(t, "s.json", cfg.scenarioFile)
	assert.Equal(t, "c.svg", cfg.svgFile)
	assert.Equal(t, "r.csv", cfg.recordFile)
	assert.True(t, cfg.quiet)

	cfg, err = parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, defaultConfig(), cfg)

	_, err = parseFlags([]string{"-h"}, io.Discard)
	assert.ErrorIs(t, err, flag.ErrHelp)
}

func TestParseFlags_conflicts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", "s.json", "-rate", "10"}, "-rate: describes the built-in scenario, which -scenario replaces"},
		{[]string{"-replay", "t.csv", "-outage", "1s"}, "-outage: describes the built-in scenario, which -replay replaces"},
		{[]string{"-scenario", "s.json", "-replay", "t.csv"}, "-scenario and -replay: give one; a trace brings its own traffic"},
		{[]string{"-record", "r.csv", "-replay", "t.csv"}, "-record and -replay: give one; -record writes the trace of a simulation"},
		{[]string{"extra"}, `unexpected argument "extra": every setting is a flag`},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(tc.args, &stderr)
		assert.EqualError(t, err, tc.want)
		assert.Contains(t, stderr.String(), tc.want)
		assert.Contains(t, stderr.String(), "Usage of simulate", "the usage follows the error")
	}
}

func TestRun_scenarioFile(t *testing.T) {
	cfg := defaultConfig()
	cfg.scenarioFile = "testdata/slow-brownout.json"
	out := runToString(t, cfg)
	assert.Contains(t, out, "scenario testdata/slow-brownout.json: 6 phases over 2m0s; seed 1")
	assert.Contains(t, out, "brownout        10s       2000   60.0%  unlimited     500ms  -\n")
	assert.Contains(t, out, "peak            40s       3000    1.0%       1000     300ms  overload\n")
	assert.Len(t, regexp.MustCompile(`(?m)^ +\d+  `).FindAllString(out, -1), 120, "one line per simulated second")

	cfg.scenarioFile = filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(cfg.scenarioFile, []byte(`{"phases": [{"duration": "1s"}]}`), 0o644))
	var buf bytes.Buffer
	assert.EqualError(t, run(cfg, &buf, io.Discard), cfg.scenarioFile+`: phase 1 ("phase 1"): rate: missing (requests offered per second)`)
	assert.Empty(t, buf.String())
}

func TestRun_comparisonRow(t *testing.T) {
	cfg := defaultConfig()
	cfg.quiet = true
	out := runToString(t, cfg)
	assert.Contains(t, out, "| 0 (0.00 %) | 1.8 % | 0.2 s | 0.3 s | 99.0 % | 1.30 |\n")

	cfg.phases[healthy].length = 0
	cfg.capacity = 0
	out = runToString(t, cfg)
	assert.Contains(t, out, "| – | 1.2 % | 0.2 s | 0.2 s | – | no success |\n",
		"no healthy phase; nothing to serve while overloaded")
}

func TestRun_plainOverridesTheRefinements(t *testing.T) {
	on, off := defaultConfig(), defaultConfig()
	on.plain, off.plain = true, true
	on.aggression, on.countDrops, on.trust = 3, true, true
	off.aggression, off.countDrops, off.trust = 1, false, false
	out := runToString(t, on)
	assert.Equal(t, runToString(t, off), out, "-plain ignores -aggression, -count-drops and -trust-recent")
	assert.Contains(t, out, "buckets=20, plain formula;")
}

func TestRun_saysWhereTheFilesWent(t *testing.T) {
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.quiet = true // a file asked for is still reported
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(cfg, &stdout, &stderr))
	assert.Empty(t, stderr.String(), "no file, nothing to say")
	quietReport := stdout.String()

	cfg.svgFile = filepath.Join(dir, "chart.svg")
	cfg.recordFile = filepath.Join(dir, "trace.csv")
	stdout.Reset()
	require.NoError(t, run(cfg, &stdout, &stderr))
	assert.Equal(t, "wrote "+cfg.recordFile+" (trace of 70000 calls, for -replay)\n"+
		"wrote "+cfg.svgFile+" (SVG chart of 35s in 100ms bins)\n", stderr.String())
	assert.Equal(t, quietReport, stdout.String(), "the report is the same with or without files")
	assert.FileExists(t, cfg.svgFile)

	replay := defaultConfig()
	replay.replayFile = cfg.recordFile
	replay.svgFile = filepath.Join(dir, "replay.svg")
	replay.quiet = true
	stderr.Reset()
	require.NoError(t, run(replay, io.Discard, &stderr))
	assert.Equal(t, "wrote "+replay.svgFile+" (SVG chart of 35s in 100ms bins)\n", stderr.String())
	assert.FileExists(t, replay.svgFile)
}
