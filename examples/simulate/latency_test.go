package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLatency(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name, in string
		base     time.Duration
		want     distribution
		err      string
	}{
		{name: "fixed", in: "250ms", base: 250 * ms},
		{name: "zero", in: "0s"},
		{name: "uniform", in: "uniform(1s,5s)", want: distribution{shape: shapeUniform, low: time.Second, high: 5 * time.Second}},
		{name: "spaces", in: " uniform(1s, 5s) ", want: distribution{shape: shapeUniform, low: time.Second, high: 5 * time.Second}},
		{name: "tail", in: "tail(5ms,200ms,1s)", want: distribution{shape: shapeTail, median: 5 * ms, p99: 200 * ms, p999: time.Second}},
		{name: "hang", in: "hang", want: distribution{shape: shapeHang}},
		{name: "not a duration", in: "fast", err: `latency "fast": not a Go duration such as "250ms"`},
		{name: "uniform, one argument", in: "uniform(1s)", err: `latency "uniform(1s)": want uniform(low,high)`},
		{name: "tail, unclosed", in: "tail(5ms,200ms,1s", err: `latency "tail(5ms,200ms,1s": want tail(median,p99,p99.9)`},
		{name: "tail, bad duration", in: "tail(5ms,2,1s)", err: `latency "tail(5ms,2,1s)": "2" is not a Go duration such as "250ms"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, d, err := parseLatency(tc.in)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.base, base)
			assert.Equal(t, tc.want, d)
			back, again, err := parseLatency(d.format(base))
			require.NoError(t, err, "format's output parses")
			assert.Equal(t, tc.base, back)
			assert.Equal(t, tc.want, again)
		})
	}
}

func TestCheckLatency(t *testing.T) {
	ms := time.Millisecond
	tailOf := func(median, p99, p999 time.Duration) distribution {
		return distribution{shape: shapeTail, median: median, p99: p99, p999: p999}
	}
	for _, tc := range []struct {
		name string
		base time.Duration
		d    distribution
		err  string // empty for valid
	}{
		{name: "fixed", base: time.Hour},
		{name: "fixed, negative", base: -ms, err: "latency -1ms: must not be negative"},
		{name: "fixed, too long", base: 2 * time.Hour, err: "latency 2h0m0s: at most 1h0m0s"},
		{name: "uniform", d: distribution{shape: shapeUniform, low: 0, high: time.Second}},
		{name: "uniform, one point", d: distribution{shape: shapeUniform, low: time.Second, high: time.Second}},
		{name: "uniform, backwards", d: distribution{shape: shapeUniform, low: 2 * time.Second, high: time.Second},
			err: "latency uniform(2s,1s): low above high"},
		{name: "uniform, too long", d: distribution{shape: shapeUniform, high: 2 * time.Hour},
			err: "latency uniform: high 2h0m0s: at most 1h0m0s"},
		{name: "tail", d: tailOf(5*ms, 200*ms, time.Second)},
		{name: "tail, flat", d: tailOf(5*ms, 5*ms, 5*ms)},
		{name: "tail, zero median", d: tailOf(0, 200*ms, time.Second), err: "latency tail(0s,200ms,1s): want 0 < median ≤ p99 ≤ p99.9"},
		{name: "tail, p99 above p99.9", d: tailOf(5*ms, 2*time.Second, time.Second),
			err: "latency tail(5ms,2s,1s): want 0 < median ≤ p99 ≤ p99.9"},
		{name: "tail, longest draw too long", d: tailOf(5*ms, time.Second, 30*time.Minute),
			err: "latency tail(5ms,1s,30m0s): its longest draw, p99.9²/p99 = 900h0m0s, is above 1h0m0s"},
		{name: "hang", d: distribution{shape: shapeHang}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLatency(tc.base, tc.d)
			if tc.err == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tc.err)
			}
		})
	}
}

// The tail's quantile function goes through its points, log-linear in
// between: half the median at 0, the median, the p99, the p99.9, and
// p99.9²/p99 at 1.
func TestDistribution_quantile(t *testing.T) {
	ms := time.Millisecond
	d := distribution{shape: shapeTail, median: 5 * ms, p99: 200 * ms, p999: time.Second}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0, 2500 * time.Microsecond},
		{0.25, 3535534 * time.Nanosecond}, // √(2.5 ms × 5 ms)
		{0.5, 5 * ms},
		{0.99, 200 * ms},
		{0.999, time.Second},
		{1, 5 * time.Second},
	} {
		assert.InDelta(t, float64(tc.want), float64(d.quantile(tc.q)), 1, "q = %v", tc.q)
	}
}

// Draws from a tail and a uniform distribution fall where their
// quantiles say, within a generous tolerance; seeded.
func TestDistribution_draw(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ms := time.Millisecond
	const n = 100_000
	quantileOf := func(d distribution, qs ...float64) []time.Duration {
		draws := make([]time.Duration, n)
		for i := range draws {
			var answers bool
			draws[i], answers = d.draw(0, r)
			require.True(t, answers)
		}
		slices.Sort(draws)
		var out []time.Duration
		for _, q := range qs {
			out = append(out, draws[int(q*n)])
		}
		return out
	}
	tailed := quantileOf(distribution{shape: shapeTail, median: 5 * ms, p99: 200 * ms, p999: time.Second}, 0.5, 0.99, 0.999)
	assert.InEpsilon(t, float64(5*ms), float64(tailed[0]), 0.05, "median")
	assert.InEpsilon(t, float64(200*ms), float64(tailed[1]), 0.15, "p99")
	assert.InEpsilon(t, float64(time.Second), float64(tailed[2]), 0.3, "p99.9")

	uniformly := quantileOf(distribution{shape: shapeUniform, low: time.Second, high: 5 * time.Second}, 0, 0.5, 0.9999)
	assert.InDelta(t, float64(time.Second), float64(uniformly[0]), float64(5*ms))
	assert.InEpsilon(t, float64(3*time.Second), float64(uniformly[1]), 0.02)
	assert.InDelta(t, float64(5*time.Second), float64(uniformly[2]), float64(5*ms))

	before := *r
	latency, answers := distribution{}.draw(250*ms, r)
	assert.Equal(t, 250*ms, latency)
	assert.True(t, answers)
	assert.Equal(t, before, *r, "a fixed latency draws nothing")
	_, answers = distribution{shape: shapeHang}.draw(0, r)
	assert.False(t, answers, "a hung call never answers")
}

func TestPhase_answer(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name         string
		ph           phase
		timeout      time.Duration
		wantLatency  time.Duration
		wantTimedOut bool
	}{
		{"no timeout", phase{latency: time.Minute}, 0, time.Minute, false},
		{"answers before the timeout", phase{latency: 20 * time.Second}, 30 * time.Second, 20 * time.Second, false},
		{"answers at the timeout: too late", phase{latency: 30 * time.Second}, 30 * time.Second, 30 * time.Second, true},
		{"slower than the timeout", phase{latency: time.Minute}, 30 * time.Second, 30 * time.Second, true},
		{"hung", phase{distribution: distribution{shape: shapeHang}}, 30 * time.Second, 30 * time.Second, true},
	} {
		latency, timedOut := tc.ph.answer(tc.timeout, r)
		assert.Equal(t, tc.wantLatency, latency, tc.name)
		assert.Equal(t, tc.wantTimedOut, timedOut, tc.name)
	}
}

// reasonBreaker admits everything and records when each outcome arrives,
// with its reason ("" for a success).
type reasonBreaker struct {
	fakeBreaker
	reasons []string
}

type reasonPromise struct{ b *reasonBreaker }

func (p reasonPromise) Accept() { p.record(true, "") }
func (p reasonPromise) Reject(reason string) {
	p.record(false, reason)
}
func (p reasonPromise) record(ok bool, reason string) {
	p.b.outcomes = append(p.b.outcomes, outcomeAt{p.b.clk.now, ok})
	p.b.reasons = append(p.b.reasons, reason)
}

func (b *reasonBreaker) Allow() (srebreaker.Promise, error) { return reasonPromise{b}, nil }

// A call made while the dependency hangs times out at its start plus the
// timeout, even when the dependency healed meanwhile: its answer was never
// coming. Calls made after healing answer as usual, before it.
func TestSimulate_hungCallsTimeOutAfterHealing(t *testing.T) {
	clk := &virtualClock{now: epoch}
	rb := &reasonBreaker{fakeBreaker: fakeBreaker{clk: clk}}
	d := &driver{clk: clk, b: rb, gauge: &flightGauge{}}
	timeout := 5 * time.Second
	sc := scenario{timeout: timeout, phases: []phase{
		{name: "hang", length: time.Second, distribution: distribution{shape: shapeHang}},
		{name: "healed", length: time.Second, latency: 10 * time.Millisecond},
	}}
	r := rand.New(rand.NewPCG(1, 2))
	at := func(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }
	var total counts
	for _, call := range []struct {
		ms    int
		phase int
	}{{0, 0}, {900, 0}, {1000, 1}, {1500, 1}} {
		latency, timedOut := sc.phases[call.phase].answer(sc.timeout, r)
		var c counts
		c.finish(d, d.allow(at(call.ms)), at(call.ms), latency, true, false, timedOut)
		total.add(c)
	}
	d.drain()
	assert.Equal(t, []outcomeAt{{at(1010), true}, {at(1510), true}, {at(5000), false}, {at(5900), false}}, rb.outcomes)
	assert.Equal(t, []string{"", "", timeoutReason, timeoutReason}, rb.reasons)
	assert.Equal(t, counts{succeeded: 2, timedOut: 2}, total)
	assert.Equal(t, 3, d.gauge.peak, "the two hung calls and one answering")
	assert.Equal(t, 0, d.gauge.now)
}

func TestFlightGauge_peak(t *testing.T) {
	var g flightGauge
	steps := []int{1, 1, -1, 1, 1, -1, -1, -1}
	for i, n := range steps {
		g.add(n, epoch.Add(time.Duration(i)*time.Second))
	}
	assert.Equal(t, flightGauge{now: 0, peak: 3, peakAt: epoch.Add(4 * time.Second)}, g)
	var none *flightGauge
	none.add(1, epoch) // a driver without a gauge counts nothing
}

func TestParseScenario_timeoutAndDistributions(t *testing.T) {
	s, err := parseScenario(strings.NewReader(`{"timeout": "30s", "phases": [
		{"name": "tail", "duration": "10s", "rate": 200, "latency": "tail(5ms, 25ms, 100ms)"},
		{"name": "hang", "duration": "40s", "rate": 200, "latency": "hang"},
		{"name": "long", "duration": "10s", "rate": 50, "latency": "uniform(1s,5s)"}
	]}`))
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, s.timeout)
	assert.Equal(t, distribution{shape: shapeHang}, s.phases[1].distribution)
	assert.Equal(t, distribution{shape: shapeUniform, low: time.Second, high: 5 * time.Second}, s.phases[2].distribution)
	assert.True(t, s.hasLatency())

	for _, tc := range []struct{ name, in, err string }{
		{"hang without a timeout", `{"phases": [{"name": "h", "duration": "1s", "rate": 1, "latency": "hang"}]}`,
			`phase 1 ("h"): latency hang: its calls never answer; give the client a timeout`},
		{"bad timeout", `{"timeout": "soon", "phases": [{"duration": "1s", "rate": 1}]}`, `timeout "soon": not a Go duration such as "30s"`},
		{"negative timeout", `{"timeout": "-1s", "phases": [{"duration": "1s", "rate": 1}]}`, `timeout -1s: must be between 0 (none) and 1h0m0s`},
		{"bad tail", `{"phases": [{"name": "t", "duration": "1s", "rate": 1, "latency": "tail(1s,5ms,2s)"}]}`,
			`phase 1 ("t"): latency tail(1s,5ms,2s): want 0 < median ≤ p99 ≤ p99.9`},
	} {
		_, err := parseScenario(strings.NewReader(tc.in))
		assert.EqualError(t, err, tc.err, tc.name)
	}
}

// testdata/blackhole.json is the blackhole scenario as a file.
func TestNamedScenario_blackholeFile(t *testing.T) {
	named, err := namedConfig(t, "blackhole").scenario()
	require.NoError(t, err)
	file, err := loadScenario("testdata/blackhole.json")
	require.NoError(t, err)
	named.source = file.source
	assert.Equal(t, named, file)
}

func TestParseFlags_namedScenarios(t *testing.T) {
	cfg, err := parseFlags([]string{"-scenario", "blackhole"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "blackhole", cfg.named)
	assert.Empty(t, cfg.scenarioFile)
	assert.Equal(t, 200, cfg.rate, "the scenario's own rate")

	cfg, err = parseFlags([]string{"-scenario", "blackhole", "-rate", "2000", "-timeout", "10s", "-latency", "tail(5ms,20ms,50ms)"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 2000, cfg.rate)
	require.NotNil(t, cfg.timeout)
	assert.Equal(t, 10*time.Second, *cfg.timeout)
	sc, err := cfg.scenario()
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, sc.timeout)
	assert.Equal(t, 2000.0, sc.phases[1].rate)
	assert.Equal(t, distribution{shape: shapeTail, median: 5 * time.Millisecond, p99: 20 * time.Millisecond,
		p999: 50 * time.Millisecond}, sc.phases[2].distribution)
	assert.Equal(t, distribution{shape: shapeHang}, sc.phases[1].distribution, "-latency leaves the hang")

	cfg, err = parseFlags([]string{"-scenario", "long-polls", "-rates", "5,10"}, io.Discard)
	require.NoError(t, err, "a named scenario can be swept over rates")
	assert.Equal(t, []int{5, 10}, cfg.rates)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", "blackhole", "-errors", "0.1"}, "-errors: describes the built-in scenario, which -scenario blackhole replaces"},
		{[]string{"-scenario", "s.json", "-latency", "5ms"}, "-latency: describes the built-in scenario, which -scenario replaces"},
		{[]string{"-replay", "t.csv", "-timeout", "1s"}, "-timeout and -replay: give one; a trace's calls end when its rows say"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		assert.EqualError(t, err, tc.want)
	}
	_, err = parseFlags([]string{"-latency", "tail(1s,5ms,2s)"}, io.Discard)
	assert.ErrorContains(t, err, "want 0 < median ≤ p99 ≤ p99.9")
	_, err = parseFlags([]string{"-timeout", "-1s"}, io.Discard)
	assert.ErrorContains(t, err, "must be between 0 (none) and 1h0m0s")
}

// The standard scenario takes -latency and -timeout too; a hang without a
// timeout is refused.
func TestConfig_scenario_latencyAndTimeout(t *testing.T) {
	cfg := defaultConfig()
	cfg.latency = &wellLatency{distribution: distribution{shape: shapeHang}}
	_, err := cfg.scenario()
	assert.EqualError(t, err, `phase 1 ("healthy"): latency hang: its calls never answer; give the client a timeout`)
	timeout := time.Second
	cfg.timeout = &timeout
	sc, err := cfg.scenario()
	require.NoError(t, err)
	assert.Equal(t, time.Second, sc.timeout)
	for _, p := range sc.phases {
		assert.Equal(t, shapeHang, p.distribution.shape, p.name)
	}
}

func TestRun_namedScenarioReport(t *testing.T) {
	cfg := namedConfig(t, "blackhole")
	cfg.quiet = true
	out := runToString(t, cfg)
	assert.Contains(t, out, "scenario blackhole: 3 phases over 1m30s, 200 requests/s, timeout 30s; seed 1\n")
	assert.Contains(t, out, "hang            40s        200    0.0%  unlimited                 hang  outage\n")
	assert.Contains(t, out, "healed          40s        200    0.0%  unlimited tail(5ms,25ms,100ms)  healed\n")
	assert.Regexp(t, `calls:    peak in flight                     \d+, at \d+\.\d s \(\w+\)\n`, out)
	assert.Regexp(t, `hang:     timed out                          \d+ \(100\.0% of those allowed\)\n`, out)

	_, err := namedConfig(t, "long-polls").scenario()
	require.NoError(t, err)
	cfg = defaultConfig()
	cfg.named = "nowhere"
	assert.ErrorContains(t, run(cfg, io.Discard, io.Discard), "-scenario nowhere: no such built-in scenario; the names are blackhole, heavy-tail, long-calls, long-polls, slowdown")
}

// A trace recorded from a scenario with a timeout gives a call that timed
// out as a failure after the timeout, so that replaying it drops exactly
// the calls the simulation dropped. The plain formula sheds the hang once
// its timeouts come back, whatever the breaker makes of calls in flight.
func TestRecordReplay_timeouts(t *testing.T) {
	cfg := namedConfig(t, "blackhole")
	cfg.rate, cfg.plain = 50, true
	sc, err := cfg.scenario()
	require.NoError(t, err)
	var trace bytes.Buffer
	sim, err := simulateScenario(cfg.breakerConfig, sc, &trace)
	require.NoError(t, err)
	assert.Contains(t, trace.String(), "\n10,failure,30s\n", "the hang's first call")
	rep, err := replay(cfg.breakerConfig, &trace)
	require.NoError(t, err)
	require.Len(t, rep.seconds, len(sim.seconds))
	dropped := 0
	for i := range sim.seconds {
		s, r := sim.seconds[i], rep.seconds[i]
		dropped += s.dropped
		assert.Equal(t, []int{s.offered, s.allowed, s.succeeded, s.dropped}, []int{r.offered, r.allowed, r.succeeded, r.dropped},
			"second %d", i+1)
	}
	assert.Greater(t, dropped, 0, "the scenario sheds something")
}
