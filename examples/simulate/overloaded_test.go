package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// saysOverloadedPair simulates cfg without and with -says-overloaded.
func saysOverloadedPair(t *testing.T, cfg config) (without, with *result) {
	t.Helper()
	cfg.saysOverloaded = false
	without, err := simulate(cfg)
	require.NoError(t, err)
	cfg.saysOverloaded = true
	with, err = simulate(cfg)
	require.NoError(t, err)
	return without, with
}

// TestSimulate_saysOverloadedHoldsAttemptsUnderK: at a quarter of the
// offered rate, a dependency that fails the excess as any error draws 1.78
// attempts per success, whatever K (the drops count up to K−1 per admitted
// call); one that says it is overloaded has the breaker judge by the book's
// formula, every drop counted (srebreaker.RejectOverloaded), with an
// aggression of 1.1, and a little under K calls, 1.46 here, reach it per
// success, for the same goodput.
func TestSimulate_saysOverloadedHoldsAttemptsUnderK(t *testing.T) {
	cfg := defaultConfig()
	cfg.capacity = 0.25
	without, with := saysOverloadedPair(t, cfg)
	fw, f := without.figures(), with.figures()
	assert.InDelta(t, 1.78, fw.attemptsPerSuccess, 0.01, "without: the excess fails as any error")
	assert.InDelta(t, 1.46, f.attemptsPerSuccess, 0.01, "with -says-overloaded")
	assert.Less(t, f.attemptsPerSuccess, breaker.DefaultK, "with -says-overloaded: under K")
	assert.Less(t, f.attemptsPerSuccess, fw.attemptsPerSuccess-0.1, "fewer attempts than without")
	assert.InDelta(t, fw.goodput, f.goodput, 0.5, "about the same goodput (98.8 %% of capacity)")

	cfg.k = 1.2 // K now sets what reaches an overloaded dependency
	_, lower := saysOverloadedPair(t, cfg)
	assert.Less(t, lower.figures().attemptsPerSuccess, f.attemptsPerSuccess-0.2, "a lower K, fewer attempts")
}

// TestSimulate_saysOverloadedChangesNothingBeforeTheOverload: the built-in
// scenario's phases before the overload have no capacity, so the flag
// leaves their calls, and the figures they give, as they were; only the
// overload phase differs.
func TestSimulate_saysOverloadedChangesNothingBeforeTheOverload(t *testing.T) {
	for _, capacity := range []float64{0.5, 0.25} {
		cfg := defaultConfig()
		cfg.capacity = capacity
		without, with := saysOverloadedPair(t, cfg)
		assert.Equal(t, without.phases[:overload], with.phases[:overload], "capacity %v: the phases before the overload", capacity)
		assert.Equal(t, without.slots[:overload], with.slots[:overload], "capacity %v: their slots", capacity)
		fw, f := without.figures(), with.figures()
		assert.Equal(t, figures{fw.falseDrops, fw.outageReached, fw.shedAfter, fw.admittedAfter, 0, 0},
			figures{f.falseDrops, f.outageReached, f.shedAfter, f.admittedAfter, 0, 0}, "capacity %v", capacity)
		assert.NotEqual(t, without.phases[overload], with.phases[overload], "capacity %v: the overload phase", capacity)
	}
}

// TestSimulateFleet_saysOverloaded: a fleet's clients report the excess
// as overload too: 10 clients at 200 requests/s, a quarter served, judge
// by the book's formula, about K attempts per success (1.57 against 1.73
// without the flag).
func TestSimulateFleet_saysOverloaded(t *testing.T) {
	cfg := defaultConfig()
	cfg.clients, cfg.rate, cfg.capacity = 10, 200, 0.25
	without, with := saysOverloadedPair(t, cfg)
	fw, f := without.figures(), with.figures()
	assert.Equal(t, without.phases[:overload], with.phases[:overload], "the phases before the overload")
	assert.NotEqual(t, fw.attemptsPerSuccess, f.attemptsPerSuccess, "the flag reaches the fleet's clients")
	assert.InDelta(t, breaker.DefaultK, f.attemptsPerSuccess, 0.2, "about K attempts per success")
}

// TestSimulate_mixSaysOverloaded: with a criticality mix, whether the
// dependency serves the highest levels first or first come, first served,
// the calls it has no room for are reported as overload, and about K
// attempts per success reach it (1.38 and 1.45; 1.45 and 1.78 without the
// flag).
func TestSimulate_mixSaysOverloaded(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		cfg := defaultConfig()
		cfg.capacity, cfg.mix, cfg.fifo = 0.25, mix{20, 40, 20, 20}, fifo
		without, with := saysOverloadedPair(t, cfg)
		fw, f := without.figures(), with.figures()
		assert.Equal(t, without.phases[:overload], with.phases[:overload], "fifo %v: the phases before the overload", fifo)
		assert.NotEqual(t, fw.attemptsPerSuccess, f.attemptsPerSuccess, "fifo %v: the flag is honoured", fifo)
		assert.InDelta(t, breaker.DefaultK, f.attemptsPerSuccess, 0.2, "fifo %v: about K attempts per success", fifo)
	}
}

// TestSimulate_saysOverloadedLeavesErrorsAsFailures: a dependency that
// serves every call but fails half of them at its error rate is not
// overloaded, and says nothing: the flag, given a capacity it never
// reaches, changes no call.
func TestSimulate_saysOverloadedLeavesErrorsAsFailures(t *testing.T) {
	cfg := defaultConfig()
	cfg.capacity, cfg.errorRate = 1, 0.5
	without, with := saysOverloadedPair(t, cfg)
	assert.Equal(t, without.phases, with.phases)
}

func TestParseScenario_saysOverloaded(t *testing.T) {
	s, err := parseScenario(strings.NewReader(`{"phases": [
		{"name": "full", "role": "overload", "duration": "10s", "rate": 2000, "capacity": 500, "saysOverloaded": true},
		{"duration": "1s", "rate": 10, "capacity": 5}
	]}`))
	require.NoError(t, err)
	assert.True(t, s.phases[0].saysOverloaded)
	assert.False(t, s.phases[1].saysOverloaded, "false unless given")
	assert.True(t, s.saysOverloaded())

	_, err = parseScenario(strings.NewReader(`{"phases": [{"name": "p", "duration": "1s", "rate": 10, "saysOverloaded": true}]}`))
	assert.EqualError(t, err, `phase 1 ("p"): saysOverloaded: no call is beyond the capacity of a phase without one; give a capacity too`)

	// A scenario file with the field runs as the built-in scenario with
	// the flag does.
	cfg := defaultConfig()
	cfg.capacity, cfg.saysOverloaded = 0.25, true
	builtIn, err := simulate(cfg)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"phases": [
		{"name": "healthy", "role": "healthy", "duration": "5s", "rate": 2000, "errors": 0.01},
		{"name": "outage", "role": "outage", "duration": "10s", "rate": 2000, "errors": 1},
		{"name": "healed", "role": "healed", "duration": "10s", "rate": 2000, "errors": 0.01},
		{"name": "overload", "role": "overload", "duration": "10s", "rate": 2000, "errors": 0.01, "capacity": 500, "saysOverloaded": true}
	]}`), 0o644))
	cfg = defaultConfig()
	cfg.scenarioFile = file
	fromFile, err := simulate(cfg)
	require.NoError(t, err)
	assert.Equal(t, builtIn.phases, fromFile.phases)

	var out bytes.Buffer
	require.NoError(t, run(cfg, &out, io.Discard))
	assert.Contains(t, out.String(), "* the calls beyond the capacity are rejected as overloaded (saysOverloaded)")
}

func TestParseFlags_saysOverloaded(t *testing.T) {
	cfg, err := parseFlags([]string{"-says-overloaded", "-capacity", "0.25"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.saysOverloaded)
	sc, err := cfg.scenario()
	require.NoError(t, err)
	for i, p := range sc.phases {
		assert.Equal(t, i == overload, p.saysOverloaded, "phase %s: only the overload phase has a capacity", p.name)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", "s.json", "-says-overloaded"}, "-says-overloaded: describes the built-in scenario, which -scenario replaces"},
		{[]string{"-scenario", "blackhole", "-says-overloaded"}, "-says-overloaded: describes the built-in scenario, which -scenario blackhole replaces"},
		{[]string{"-replay", "t.csv", "-says-overloaded"}, "-says-overloaded: describes the built-in scenario, which -replay replaces"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		assert.EqualError(t, err, tc.want)
	}
}

// TestRun_saysOverloaded: the report and a sweep say the dependency says
// so, and -record, whose trace cannot, refuses it.
func TestRun_saysOverloaded(t *testing.T) {
	cfg := defaultConfig()
	cfg.saysOverloaded, cfg.quiet = true, true
	var out bytes.Buffer
	require.NoError(t, run(cfg, &out, io.Discard))
	assert.Contains(t, out.String(), "2000 requests/s offered, the overload's excess rejected as overloaded; seed 1")

	cfg.seeds = []uint64{1, 2}
	out.Reset()
	require.NoError(t, run(cfg, &out, io.Discard))
	assert.Contains(t, out.String(), "overload 10s at 50 % capacity, the excess rejected as overloaded;")

	cfg = defaultConfig()
	cfg.saysOverloaded, cfg.recordFile = true, filepath.Join(t.TempDir(), "r.csv")
	assert.EqualError(t, run(cfg, io.Discard, io.Discard),
		"-record: a trace says only whether a call succeeded, not that the dependency said it was overloaded; leave out -says-overloaded or the scenario's saysOverloaded")
	assert.NoFileExists(t, cfg.recordFile)
}
