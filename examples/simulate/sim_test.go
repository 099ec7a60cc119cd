package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README (its picture), docs/design/behaviour.md and docs/design/algorithm.md quote
// these figures of the default run:
// they change together.
// TestSimulate_standardScenarioMeetsTheGoals runs the standard scenario with
// the default options and holds them to the goals docs/design/behaviour.md states:
// no false drops, under 10 % of the outage reaching the dependency, 90 %
// shed within 1.5 s, at least 99 % of what the dependency could serve
// without error served under overload (it fails 1 % of what it serves),
// with at most K attempts per success, and 95 % admitted, sustained, within
// 0.5 s of healing (issue 20's goal) although the healed dependency fails
// 1 % of its calls, as before the outage. The exact figures are pinned too,
// so that a change to the algorithm shows.
func TestSimulate_standardScenarioMeetsTheGoals(t *testing.T) {
	cfg := defaultConfig()
	res, err := simulate(cfg)
	require.NoError(t, err)
	f := res.figures()
	assert.Equal(t, 0.0, f.falseDrops, "false drops while healthy")
	assert.Less(t, f.outageReached, 10.0, "%% of the outage that reached the dependency")
	assert.LessOrEqual(t, f.shedAfter, 1.5, "seconds until 90 %% was shed, sustained")
	assert.LessOrEqual(t, f.admittedAfter, 0.5, "seconds after healing until 95 %% was admitted, sustained")
	assert.GreaterOrEqual(t, f.goodput, 99*(1-cfg.errorRate), "%% of capacity served while overloaded")
	assert.LessOrEqual(t, f.attemptsPerSuccess, breaker.DefaultK, "attempts per success while overloaded")

	// 1.94 % of the outage and 1.30 attempts per success: the first
	// buckets of the outage and of the overload are judged on their own
	// calls (2.045 % and 1.38 before). The recovery is judged on its own
	// calls too, not on the outage's failures still in the window: 0.3 s
	// (1.7 s before; 0.3 s when the healed dependency never fails, below).
	// Attempts per success moved from 1.29 to 1.30 with that rule, which
	// changes no decision under overload but the random draws' order:
	// over seeds 1–30 both give 1.29 or 1.30. 1.82 % since protection
	// no longer applies once a down run holds more than twice its calls
	// (1.94 % before); goodput 99.00 % (99.01 % before) and 1.2954
	// attempts per success (1.2960) only from the draws' order.
	assert.Equal(t, figures{falseDrops: 0, outageReached: 1.82, shedAfter: 0.2, admittedAfter: 0.3, goodput: 99,
		attemptsPerSuccess: f.attemptsPerSuccess}, f)
	assert.InDelta(t, 1.2954, f.attemptsPerSuccess, 0.0005)

	cfg.scenarioFile = "testdata/standard.json"
	fromFile, err := simulate(cfg)
	require.NoError(t, err)
	assert.Equal(t, f, fromFile.figures(), "testdata/standard.json is the built-in scenario")
}

// The standard scenario as it was until issue 20, in which the healed and
// overloaded dependency failed no call it served: the defaults meet every
// goal there, 95 % admitted within 1 s of healing and 99 % of capacity
// served.
func TestSimulate_standardScenarioWithoutErrorsAfterTheOutage(t *testing.T) {
	cfg := defaultConfig()
	cfg.scenarioFile = "testdata/standard-no-errors-after-outage.json"
	res, err := simulate(cfg)
	require.NoError(t, err)
	f := res.figures()
	// 95 % is admitted, sustained, 0.3 s after healing with this seed: the
	// first call after healing is admitted by chance, at a drop rate of
	// 98 %.
	assert.Equal(t, figures{falseDrops: 0, outageReached: 1.82, shedAfter: 0.2, admittedAfter: 0.3, goodput: 100,
		attemptsPerSuccess: f.attemptsPerSuccess}, f)
	assert.InDelta(t, 1.29, f.attemptsPerSuccess, 0.005)
}

// An outage that comes back while the recovery from the one before is
// judged on its own calls (testdata/relapse.json) is shed as fast as the
// first: a bucket of failures alone ends the recovery. Seeds 1–5: 90 % shed
// 0.2 s after the relapse began, 2.8–3.0 % of it reaching the dependency
// (2.5–2.8 % before the recovery was judged on its own calls, when the
// healed dependency was still partly shed as it relapsed), and 95 %
// admitted 0.2–0.3 s after the second healing (not within its 0.5 s
// before).
func TestSimulate_relapseIsShedAsFastAsTheOutage(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := defaultConfig()
		cfg.scenarioFile, cfg.seed = "testdata/relapse.json", seed
		res, err := simulate(cfg)
		require.NoError(t, err)
		f := res.figures()
		assert.LessOrEqual(t, f.shedAfter, 0.2, "seed %d: seconds until 90 %% of the relapse was shed", seed)
		assert.Less(t, f.outageReached, 3.5, "seed %d: %% of the relapse that reached the dependency", seed)
		assert.LessOrEqual(t, f.admittedAfter, 0.5, "seed %d: seconds until 95 %% was admitted after healing again", seed)
		assert.Equal(t, 0.0, f.falseDrops, "seed %d", seed)
	}
}

// TestSimulate_standardScenarioPlainFormula pins the plain formula, with the
// window go-zero uses (10 s, 40 buckets), on the standard scenario: the
// figures docs/design/behaviour.md compares the defaults with.
func TestSimulate_standardScenarioPlainFormula(t *testing.T) {
	cfg := defaultConfig()
	cfg.plain, cfg.window, cfg.buckets = true, 10*time.Second, 40
	res, err := simulate(cfg)
	require.NoError(t, err)
	f := res.figures()
	assert.Equal(t, 0.0, f.falseDrops)
	assert.InDelta(t, 66.3, f.outageReached, 0.05)
	assert.InDelta(t, 9.6, f.shedAfter, 1e-9) // 9.4 s, counted from the first slot shed, however brief
	assert.InDelta(t, 7.9, f.admittedAfter, 1e-9)
	assert.InDelta(t, 98.94, f.goodput, 0.005)
	assert.InDelta(t, 1.92, f.attemptsPerSuccess, 0.005)
}

func TestResult_figures_absentRoles(t *testing.T) {
	cfg := defaultConfig()
	cfg.phases[healthy].length = 0
	cfg.phases[healed].length = 0
	res, err := simulate(cfg)
	require.NoError(t, err)
	f := res.figures()
	assert.True(t, math.IsNaN(f.falseDrops), "no healthy phase")
	assert.True(t, math.IsNaN(f.admittedAfter), "no healed phase")
	assert.False(t, math.IsNaN(f.outageReached))
	assert.False(t, math.IsNaN(f.goodput))
}

func TestResult_figures_neverShed(t *testing.T) {
	cfg := defaultConfig()
	cfg.plain, cfg.window, cfg.buckets = true, 10*time.Second, 40
	cfg.phases[outage].length = time.Second // too short for the plain formula to shed 90 %
	res, err := simulate(cfg)
	require.NoError(t, err)
	assert.True(t, math.IsInf(res.figures().shedAfter, 1))
	assert.Contains(t, runToString(t, cfg), "outage:   90% shed, sustained, after         not within 1s")
}

// A share counts as reached from the first slot of 3 in a row that hold
// it; a slot alone that gets there does not, and slots without calls are
// skipped.
func TestResult_sustainedFrom(t *testing.T) {
	admitted := func(c counts) bool { return pct(c.allowed, c.offered) >= 95 }
	s := func(allowed int) counts { return counts{offered: 100, allowed: allowed} }
	none := counts{}
	for _, tc := range []struct {
		name  string
		slots []counts
		want  time.Duration // 0 for none
	}{
		{"from the first slot", []counts{s(100), s(95), s(99), s(10)}, 100 * time.Millisecond},
		{"a brief peak does not count", []counts{s(96), s(50), s(97), s(98), s(99)}, 300 * time.Millisecond},
		{"slots without calls neither count nor break the run", []counts{s(10), s(96), none, s(97), none, none, s(98)}, 200 * time.Millisecond},
		{"two slots are not enough", []counts{s(10), s(96), s(97)}, 0},
		{"never", []counts{s(94), s(94), s(94), none}, 0},
	} {
		res := &result{slots: [][]counts{tc.slots}}
		got, found := res.sustainedFrom(0, admitted)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.want != 0, found, tc.name)
	}
}

// admittedBefore counts the calls of the first phase admitted before d.
func admittedBefore(res *result, d time.Duration) (admitted, offered int) {
	for _, c := range res.slots[0][:d/slot] {
		admitted += c.allowed
		offered += c.offered
	}
	return admitted, offered
}

func TestSimulate_latencyDelaysOutcomes(t *testing.T) {
	down := func(latency time.Duration) *result {
		sc := scenario{phases: []phase{{name: "down", role: roleOutage, length: 3 * time.Second, rate: 1000, errors: 1,
			capacity: math.Inf(1), latency: latency}}}
		res, err := simulateScenario(defaultConfig().breakerConfig, sc, nil)
		require.NoError(t, err)
		return res
	}
	// Without latency the first failures are seen at once, and the breaker
	// sheds from the first 100 ms on.
	admitted, offered := admittedBefore(down(0), slot)
	assert.Less(t, admitted, offered)

	// With 500 ms latency, no outcome has reached the breaker before 500 ms:
	// everything is admitted until then, and shedding starts after.
	res := down(500 * time.Millisecond)
	admitted, offered = admittedBefore(res, 500*time.Millisecond)
	assert.Equal(t, offered, admitted)
	assert.Greater(t, res.slots[0][6].dropped, 0, "shed once the outcomes arrive")
}

// fakeBreaker admits everything and records when each outcome arrives.
type fakeBreaker struct {
	breaker.Breaker // the methods the driver does not call
	clk             *virtualClock
	outcomes        []outcomeAt
}

type outcomeAt struct {
	at time.Time
	ok bool
}

type fakePromise struct{ b *fakeBreaker }

func (p fakePromise) Accept() { p.b.outcomes = append(p.b.outcomes, outcomeAt{p.b.clk.now, true}) }
func (p fakePromise) Reject(string) {
	p.b.outcomes = append(p.b.outcomes, outcomeAt{p.b.clk.now, false})
}

func (b *fakeBreaker) Allow() (srebreaker.Promise, error) { return fakePromise{b}, nil }

func TestDriver_reportsAtAdmissionPlusLatency(t *testing.T) {
	clk := &virtualClock{now: epoch}
	fb := &fakeBreaker{clk: clk}
	d := &driver{clk: clk, b: fb}
	at := func(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }

	d.finish(d.allow(at(0)), at(0), 300*time.Millisecond, false, false)
	d.finish(d.allow(at(100)), at(100), 0, true, false) // reported at once
	d.finish(d.allow(at(100)), at(100), 100*time.Millisecond, true, false)
	d.finish(d.allow(at(150)), at(150), 50*time.Millisecond, false, false) // finishes with the previous: after it
	require.Equal(t, []outcomeAt{{at(100), true}}, fb.outcomes)

	d.allow(at(250)) // settles what finished by 250 ms
	assert.Equal(t, []outcomeAt{{at(100), true}, {at(200), true}, {at(200), false}}, fb.outcomes)
	assert.Equal(t, at(250), clk.now)

	d.drain()
	assert.Equal(t, outcomeAt{at(300), false}, fb.outcomes[3])
}

func TestCallHeap_popsInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h callHeap
	for i := range 500 {
		done := epoch.Add(time.Duration(r.IntN(50)) * time.Millisecond)
		h.push(call{done: done, key: done.UnixNano(), seq: uint64(i)})
	}
	prev := h.pop()
	for len(h) > 0 {
		c := h.pop()
		require.True(t, prev.before(&c), "%v/%d then %v/%d", prev.done, prev.seq, c.done, c.seq)
		prev = c
	}
}

func TestCapacity_carriesFractions(t *testing.T) {
	c := newCapacity(166.5)
	served := 0
	for i := range 4000 { // 2,000 calls/s for 2 s
		if c.take(time.Duration(i) * time.Second / 2000) {
			served++
		}
	}
	assert.Equal(t, 333, served, "one call at the start, then 166.5/s for 1.9995 s")
}

// Regression test for issue 12: below 5 calls/s of capacity, a limit counted
// per 100 ms slot had room only in slots without calls, and served nothing.
func TestCapacity_lowRates(t *testing.T) {
	for _, tc := range []struct {
		rate, perSecond float64
		want            int
	}{
		{rate: 2, perSecond: 1, want: 20},      // every other call
		{rate: 5, perSecond: 2.5, want: 50},    // every other call, 0.2 s apart
		{rate: 1, perSecond: 0.3, want: 1 + 5}, // one at the start, then one every 3.33 s
		{rate: 20, perSecond: 10, want: 200},
	} {
		c := newCapacity(tc.perSecond)
		served := 0
		for i := range int(20 * tc.rate) { // 20 s
			if c.take(time.Duration(float64(i) / tc.rate * float64(time.Second))) {
				served++
			}
		}
		assert.Equal(t, tc.want, served, "%v calls/s against %v/s", tc.rate, tc.perSecond)
	}
}

func TestCapacity_keepsUnusedRoomForASecond(t *testing.T) {
	c := newCapacity(10)
	assert.True(t, c.take(0))
	assert.False(t, c.take(50*time.Millisecond), "room for 0.5 call")
	served := 0
	for range 30 { // a burst after 5 s idle: a second's worth is kept
		if c.take(5 * time.Second) {
			served++
		}
	}
	assert.Equal(t, 11, served, "a second's worth, and one call")
	assert.False(t, c.hasRoom(5*time.Second))
	assert.True(t, c.hasRoom(5*time.Second+100*time.Millisecond))

	none := newCapacity(0)
	assert.False(t, none.take(0))
	assert.False(t, none.take(time.Hour))
	unlimited := newCapacity(math.Inf(1))
	for range 1000 {
		require.True(t, unlimited.take(0))
	}
}

// smallScenario writes a short scenario with latency and a capacity limit,
// cheap enough to run a few times under the race detector.
func smallScenario(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "small.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"phases": [
		{"name": "up", "role": "healthy", "duration": "4s", "rate": 300, "errors": 0.02, "latency": "50ms"},
		{"name": "down", "role": "outage", "duration": "6s", "rate": 300, "errors": 1, "latency": "400ms"},
		{"name": "back", "role": "healed", "duration": "5s", "rate": 300, "errors": 0.02},
		{"name": "busy", "role": "overload", "duration": "5s", "rate": 450.5, "errors": 0.02, "capacity": 150, "latency": "20ms"}
	]}`), 0o644))
	return path
}

func TestRun_sameFlagsSameOutput(t *testing.T) {
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.scenarioFile = smallScenario(t)
	cfg.svgFile = filepath.Join(dir, "a.svg")
	a := runToString(t, cfg)
	cfg.svgFile = filepath.Join(dir, "b.svg")
	b := runToString(t, cfg)
	assert.Equal(t, a, b)
	svgA, err := os.ReadFile(filepath.Join(dir, "a.svg"))
	require.NoError(t, err)
	svgB, err := os.ReadFile(filepath.Join(dir, "b.svg"))
	require.NoError(t, err)
	assert.Equal(t, svgA, svgB, "the same flags write the same chart, byte for byte")

	cfg.seed = 2
	assert.NotEqual(t, a, runToString(t, cfg), "another seed draws other outcomes")
}

func TestAppendSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                   "0",
		12 * time.Second:                    "12",
		1500 * time.Millisecond:             "1.5",
		500 * time.Microsecond:              "0.0005",
		time.Hour + time.Nanosecond:         "3600.000000001",
		86399*time.Second + 999_999_999:     "86399.999999999",
		2*time.Second + 20*time.Millisecond: "2.02",
	} {
		got := string(appendSeconds(nil, d))
		assert.Equal(t, want, got)
		back, err := parseSeconds(got)
		require.NoError(t, err)
		assert.Equal(t, d, back, "round trip of %s", got)
	}
}

func TestSimulate_recordWritesEveryCall(t *testing.T) {
	cfg := defaultConfig()
	cfg.rate = 100
	sc, err := cfg.scenario()
	require.NoError(t, err)
	var trace bytes.Buffer
	res, err := simulateScenario(cfg.breakerConfig, sc, &trace)
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSpace(trace.Bytes()), []byte("\n"))
	assert.Equal(t, "timestamp,outcome", string(lines[0]))
	assert.Len(t, lines, 1+3500)
	assert.Equal(t, "0.01,success", string(lines[2]))
	assert.Equal(t, "5,failure", string(lines[1+500]), "the outage's first call")
	assert.Equal(t, 3500, res.phases[0].offered+res.phases[1].offered+res.phases[2].offered+res.phases[3].offered)
}
