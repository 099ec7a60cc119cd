package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplay_formats(t *testing.T) {
	trace := `timestamp,outcome,latency
# a comment line
0,success
0.5, ok ,100ms
1.25,1,0s
1.25,true
2,failure
2.000000001,ERROR
3,0
4,false,2s
`
	res, err := replay(defaultConfig().breakerConfig, strings.NewReader(trace))
	require.NoError(t, err)
	assert.Equal(t, 8, res.rows)
	assert.Equal(t, 4, res.successes)
	assert.Equal(t, 4, res.failures)
	assert.Equal(t, 4*time.Second, res.span)
	assert.Equal(t, 0, res.dropped, "protection 5 tolerates these few failures")
	assert.Equal(t, []int{2, 2, 2, 1, 1}, offeredPerSecond(res.timeline))
	assert.Equal(t, epoch, res.start)
}

func offeredPerSecond(tl timeline) []int {
	var n []int
	for _, s := range tl.seconds {
		n = append(n, s.offered)
	}
	return n
}

func TestReplay_rfc3339(t *testing.T) {
	trace := "2025-03-01T12:00:00.5Z,success\n2025-03-01T12:00:01.75Z,failure\n2025-03-01T13:00:01.75+01:00,success\n"
	res, err := replay(defaultConfig().breakerConfig, strings.NewReader(trace))
	require.NoError(t, err)
	assert.Equal(t, time.Date(2025, 3, 1, 12, 0, 0, 500_000_000, time.UTC), res.start)
	assert.Equal(t, 1250*time.Millisecond, res.span, "times count from the first row, whatever its zone")
	assert.Equal(t, []int{1, 2}, offeredPerSecond(res.timeline))
	assert.True(t, res.rfc3339Stamps)
}

func TestReplay_shedsAFailingTrace(t *testing.T) {
	var trace strings.Builder
	for i := range 2000 { // 10 s healthy, then 10 s down, at 100 calls/s
		outcome := "success"
		if i >= 1000 {
			outcome = "failure"
		}
		fmt.Fprintf(&trace, "%s,%s\n", appendSeconds(nil, time.Duration(i)*10*time.Millisecond), outcome)
	}
	res, err := replay(defaultConfig().breakerConfig, strings.NewReader(trace.String()))
	require.NoError(t, err)
	assert.Greater(t, res.failuresShed, 300)
	assert.Equal(t, 0, res.falseDrops, "nothing dropped while healthy")
	assert.Equal(t, res.dropped, res.failuresShed+res.falseDrops)
	assert.Equal(t, res.rows, res.admitted+res.dropped)
	assert.Equal(t, res.successes, res.succeeded)
	assert.True(t, res.anyDrop)
	assert.GreaterOrEqual(t, res.firstDropAt, 10*time.Second)
}

func TestReplay_invalid(t *testing.T) {
	for _, tc := range []struct {
		name, trace, want string
	}{
		{"empty", "", "no rows: a trace needs at least one timestamp,outcome row"},
		{"header only", "timestamp,outcome\n", "no rows: a trace needs at least one timestamp,outcome row"},
		{"one field", "0,success\n1\n", "line 2: 1 fields: want timestamp,outcome or timestamp,outcome,latency"},
		{"four fields", "0,success,1s,x\n", "line 1: 4 fields: want timestamp,outcome or timestamp,outcome,latency"},
		{"bad outcome", "0,success\n1,maybe\n", `line 2: outcome "maybe": want success, ok, 1 or true; failure, error, 0 or false`},
		{"bad seconds", "0,success\n1x,ok\n", `line 2: timestamp "1x": not seconds since the start (12.5) nor RFC 3339 (2024-01-01T00:00:00.5Z)`},
		{"negative seconds", "-1,ok\n", `line 1: timestamp "-1": must not be negative`},
		{"too precise", "0.0000000001,ok\n", `line 1: timestamp "0.0000000001": more than nine decimals: the clock counts nanoseconds`},
		{"bad rfc3339", "2024-13-01T00:00:00Z,ok\n", `line 1: timestamp "2024-13-01T00:00:00Z": not RFC 3339 (2024-01-01T00:00:00.5Z) nor seconds since the start (12.5)`},
		{"mixed kinds", "2024-01-01T00:00:00Z,ok\n3,ok\n", `line 2: timestamp "3": the first row's was RFC 3339, and all rows must use the same kind`},
		{"out of order", "# header-less\n1,ok\n2,ok\n1.5,ok\n", `line 4: timestamp "1.5" is before the previous row's: rows must be in time order (sort the file by its first column)`},
		{"rfc3339 before the first", "2024-01-01T00:00:01Z,ok\n2024-01-01T00:00:00Z,ok\n",
			`line 2: timestamp "2024-01-01T00:00:00Z" is before the previous row's: rows must be in time order (sort the file by its first column)`},
		{"too long", "0,ok\n700000,ok\n", `line 2: timestamp "700000": must be at most 604800 seconds`},
		{"rfc3339 too long", "2024-01-01T00:00:00Z,ok\n2024-02-01T00:00:00Z,ok\n",
			`line 2: timestamp "2024-02-01T00:00:00Z" is 744h0m0s after the start: at most 168h0m0s can be replayed`},
		{"bad latency", "0,ok,soon\n", `line 1: latency "soon": not a Go duration such as 250ms`},
		{"negative latency", "0,ok,-1s\n", `line 1: latency "-1s": must be between 0 and 1h0m0s`},
		{"csv quote", "0,ok\n1,\"ok\n", `line 2: extraneous or missing " in quoted-field`},
		{"header later", "0,ok\ntimestamp,outcome\n", `line 2: timestamp "timestamp": not seconds since the start (12.5) nor RFC 3339 (2024-01-01T00:00:00.5Z)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replay(defaultConfig().breakerConfig, strings.NewReader(tc.trace))
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestRun_replayErrorNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.csv")
	require.NoError(t, os.WriteFile(path, []byte("0,ok\n1,nope\n"), 0o644))
	cfg := defaultConfig()
	cfg.replayFile = path
	err := run(cfg, io.Discard, io.Discard)
	assert.EqualError(t, err, path+`: line 2: outcome "nope": want success, ok, 1 or true; failure, error, 0 or false`)
}

// A trace recorded by a simulation, replayed through the same breaker,
// drops exactly the calls the simulation dropped.
func TestRecordReplay_roundTrip(t *testing.T) {
	latency := scenario{phases: []phase{
		{name: "ok", role: roleHealthy, length: 5 * time.Second, rate: 300, errors: 0.05, capacity: math.Inf(1), latency: 150 * time.Millisecond},
		{name: "down", role: roleOutage, length: 8 * time.Second, rate: 300, errors: 1, capacity: math.Inf(1), latency: time.Second},
		{name: "back", role: roleHealed, length: 8 * time.Second, rate: 300, errors: 0.05, capacity: math.Inf(1)},
		{name: "busy", role: roleOverload, length: 6 * time.Second, rate: 333.5, errors: 0.05, capacity: 120, latency: 40 * time.Millisecond},
	}}
	builtIn, err := defaultConfig().scenario()
	require.NoError(t, err)
	for name, sc := range map[string]scenario{"built-in": builtIn, "with latency": latency} {
		t.Run(name, func(t *testing.T) {
			bc := defaultConfig().breakerConfig
			var trace bytes.Buffer
			sim, err := simulateScenario(bc, sc, &trace)
			require.NoError(t, err)
			rep, err := replay(bc, &trace)
			require.NoError(t, err)

			var simDropped int
			for _, c := range sim.phases {
				simDropped += c.dropped
			}
			require.Greater(t, simDropped, 0, "the scenario sheds something")
			assert.Equal(t, simDropped, rep.dropped)
			require.Len(t, rep.seconds, len(sim.seconds))
			for i := range sim.seconds {
				s, r := sim.seconds[i], rep.seconds[i]
				assert.Equal(t, []int{s.offered, s.allowed, s.succeeded, s.dropped}, []int{r.offered, r.allowed, r.succeeded, r.dropped},
					"second %d", i+1)
			}
		})
	}
	t.Run("another breaker drops other calls", func(t *testing.T) {
		var trace bytes.Buffer
		_, err := simulateScenario(defaultConfig().breakerConfig, builtIn, &trace)
		require.NoError(t, err)
		bc := defaultConfig().breakerConfig
		bc.window = 2 * time.Second
		rep, err := replay(bc, &trace)
		require.NoError(t, err)
		assert.Equal(t, 70000, rep.rows)
		assert.NotEqual(t, 0, rep.dropped)
	})
}

func TestRun_recordThenReplay(t *testing.T) {
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.rate = 100
	cfg.quiet = true
	cfg.recordFile = filepath.Join(dir, "trace.csv")
	runToString(t, cfg)

	replayCfg := defaultConfig()
	replayCfg.replayFile = cfg.recordFile
	replayCfg.svgFile = filepath.Join(dir, "replay.svg")
	out := runToString(t, replayCfg)
	assert.Contains(t, out, "replay of "+cfg.recordFile+": 3500 calls over 34.99s; seed 1")
	assert.Contains(t, out, "failures shed (failures avoided)")
	assert.Contains(t, out, "successes dropped (false drops)")
	assert.Regexp(t, `(?m)^    35 `, out, "per-second lines")
	svg, err := os.ReadFile(replayCfg.svgFile)
	require.NoError(t, err)
	parseSVG(t, svg)

	// The example trace in testdata is such a recording.
	want, err := os.ReadFile("testdata/trace.csv")
	require.NoError(t, err)
	cfg.phases[overload].length = 0
	runToString(t, cfg)
	got, err := os.ReadFile(cfg.recordFile)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "testdata/trace.csv is -rate 100 -overload 0 -record")
}

func TestRun_recordRemovedOnError(t *testing.T) {
	cfg := defaultConfig()
	cfg.k = 0.5
	cfg.recordFile = filepath.Join(t.TempDir(), "trace.csv")
	require.Error(t, run(cfg, io.Discard, io.Discard))
	_, err := os.Stat(cfg.recordFile)
	assert.True(t, os.IsNotExist(err), "no half-written trace is left")
}

// generatedTrace produces rows on demand, so a long trace never sits in
// memory in the test either.
type generatedTrace struct {
	rows, next int
	buf        []byte
}

func (g *generatedTrace) Read(p []byte) (int, error) {
	for len(g.buf) < len(p) && g.next < g.rows {
		g.buf = appendSeconds(g.buf, time.Duration(g.next)*time.Millisecond)
		if g.next%7 == 0 {
			g.buf = append(g.buf, ",failure\n"...)
		} else {
			g.buf = append(g.buf, ",success\n"...)
		}
		g.next++
	}
	if len(g.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

func TestReplay_streamsALongTrace(t *testing.T) {
	const rows = 120_000 // 2 minutes at 1,000 calls/s
	res, err := replay(defaultConfig().breakerConfig, &generatedTrace{rows: rows})
	require.NoError(t, err)
	assert.Equal(t, rows, res.rows)
	assert.Len(t, res.seconds, 120)
	assert.Equal(t, 0, res.dropped, "one failure in seven is well under the threshold")
}
