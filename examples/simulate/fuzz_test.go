package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fuzz targets below read what a user gives the simulation: a scenario
// file, a trace, and the latency and mix they hold. Each checks that what
// is read is in range (durations not negative, rates and weights within
// their bounds, times in order), that a second read gives the same, and
// that what the program's own writers write reads back as itself. A trace
// is read a row at a time, at most maxTraceRow bytes of one; a scenario at
// most maxScenarioSize bytes. Their seed corpora are in testdata/fuzz; go
// test runs them, make fuzz explores from them.

// readTrace reads every row of a trace, or returns the first error.
func readTrace(data []byte) (rows []traceRow, latencies bool, err error) {
	tr := newTraceReader(bytes.NewReader(data))
	for {
		row, err := tr.next()
		if err == io.EOF {
			return rows, latencies, nil
		}
		if err != nil {
			return rows, latencies, err
		}
		rows = append(rows, row)
		latencies = latencies || row.latency != 0
	}
}

func FuzzTrace(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, latencies, err := readTrace(data)
		again, _, againErr := readTrace(data)
		require.Equal(t, rows, again, "a second read")
		require.Equal(t, err, againErr, "a second read")
		var last time.Duration
		for i, row := range rows {
			require.True(t, row.at >= last && row.at <= maxTraceSpan, "row %d at %v, after %v", i+1, row.at, last)
			require.True(t, row.latency >= 0 && row.latency <= maxLatency, "row %d latency %v", i+1, row.latency)
			last = row.at
		}
		if err != nil {
			require.Less(t, len(err.Error()), 4*maxTraceRow+300, "an error quotes at most a row")
			return
		}
		require.NotEmpty(t, rows, "a trace read has a row")

		// What the simulation writes (-trace) reads back as itself.
		var out bytes.Buffer
		tw := newTraceWriter(&out, latencies)
		for _, row := range rows {
			tw.write(row.at, row.ok, row.latency)
		}
		require.NoError(t, tw.flush())
		back, _, err := readTrace(out.Bytes())
		require.NoError(t, err, "%s", out.Bytes())
		require.Equal(t, rows, back)
	})
}

// scenarioFile writes s in the scenario file format, through the writers
// the program has for its parts (a duration's String, a distribution's
// format, a role's String).
func scenarioFile(s scenario) []byte {
	var file scenarioJSON
	for _, p := range s.phases {
		rate := p.rate
		pj := phaseJSON{Name: p.name, Role: p.role.String(), Duration: p.length.String(), Rate: &rate,
			Errors: p.errors, Latency: p.distribution.format(p.latency)}
		if !math.IsInf(p.capacity, 1) {
			capacity := p.capacity
			pj.Capacity = &capacity
		}
		file.Phases = append(file.Phases, pj)
	}
	if s.mix.set() {
		file.Mix = s.mix[:]
	}
	file.FIFO, file.Shuffle = s.fifo, s.shuffle
	if s.timeout != 0 {
		file.Timeout = s.timeout.String()
	}
	data, err := json.Marshal(file)
	if err != nil {
		panic(err)
	}
	return data
}

func FuzzScenario(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseScenario(bytes.NewReader(data))
		again, againErr := parseScenario(bytes.NewReader(data))
		require.Equal(t, err, againErr, "a second read")
		if err != nil {
			require.Equal(t, scenario{}, s)
			return
		}
		require.Equal(t, s, again, "a second read")
		require.NoError(t, s.validate())
		require.True(t, len(s.phases) >= 1 && len(s.phases) <= maxPhases)
		require.True(t, s.timeout >= 0 && s.timeout <= maxLatency, "timeout %v", s.timeout)
		var requests int64
		for i, p := range s.phases {
			require.True(t, p.length > 0 && p.length <= maxDuration, "phase %d: %v", i+1, p.length)
			require.True(t, p.rate >= 0 && p.rate <= maxRate, "phase %d: rate %v", i+1, p.rate)
			require.True(t, p.errors >= 0 && p.errors <= 1, "phase %d: errors %v", i+1, p.errors)
			require.True(t, p.capacity >= 0, "phase %d: capacity %v", i+1, p.capacity)
			require.NoError(t, checkLatency(p.latency, p.distribution))
			require.True(t, p.latency >= 0 && p.latency <= maxLatency, "phase %d: latency %v", i+1, p.latency)
			require.GreaterOrEqual(t, p.requests(), int64(0))
			requests += p.requests()
			if n := p.requests(); n > 0 { // the calls arrive within the phase
				require.True(t, p.arrival(0) == 0 && p.arrival(n-1) < p.length, "phase %d: last of %d calls at %v",
					i+1, n, p.arrival(n-1))
			}
		}
		require.True(t, s.length() > 0 && s.length() <= maxDuration, "%v", s.length())
		require.LessOrEqual(t, requests, int64(maxRequests))

		back, err := parseScenario(bytes.NewReader(scenarioFile(s)))
		require.NoError(t, err, "%s", scenarioFile(s))
		require.Equal(t, s, back, "%s", scenarioFile(s))
	})
}

func FuzzLatency(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		base, d, err := parseLatency(s)
		base2, d2, err2 := parseLatency(s)
		require.Equal(t, err, err2, "a second read")
		require.Equal(t, base, base2)
		require.Equal(t, d, d2)
		if err != nil || checkLatency(base, d) != nil {
			return
		}
		for _, v := range []time.Duration{base, d.low, d.high, d.median, d.p99, d.p999} {
			require.True(t, v >= 0 && v <= maxLatency, "%q read as %v", s, v)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 8 {
			l, answers := d.draw(base, r)
			require.True(t, l >= 0 && l <= maxLatency, "%q: drew %v", s, l)
			require.Equal(t, d.shape != shapeHang, answers)
		}
		for _, q := range []float64{0, 0.5, 0.999, 1} {
			if d.shape == shapeTail {
				l := d.quantile(q)
				require.True(t, l >= 0 && l <= maxLatency, "%q: quantile %v is %v", s, q, l)
			}
		}
		backBase, back, err := parseLatency(d.format(base))
		require.NoError(t, err, "%q written as %q", s, d.format(base))
		require.Equal(t, base, backBase)
		require.Equal(t, d, back)
	})
}

func FuzzMix(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseMix(s)
		m2, err2 := parseMix(s)
		require.Equal(t, err, err2, "a second read")
		if err != nil {
			return
		}
		require.Equal(t, m, m2, "a second read")
		total := 0.0
		for i, v := range m {
			require.True(t, v >= 0 && v <= 1e6, "%q: weight %d is %v", s, i, v)
			total += v
		}
		require.Greater(t, total, 0.0)
		back, err := parseMix(m.String())
		require.NoError(t, err)
		require.Equal(t, m, back, "%q written as %q", s, m.String())
	})
}

// endless is a file that never ends, all of one byte, and counts what is
// read of it.
type endless struct {
	b    byte
	read int64
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.b
	}
	e.read += int64(len(p))
	return len(p), nil
}

// TestTraceReader_rowWithoutEnd: a trace with no line break, or with a
// quote left open, was read whole into memory as one row.
func TestTraceReader_rowWithoutEnd(t *testing.T) {
	for _, tc := range []struct {
		name, start string
		b           byte
		want        error
		bound       int64
	}{
		{"no line break", "timestamp,outcome\n0,success\n", '1', errLongRow, 3 * maxTraceRow},
		{"a quote left open", "timestamp,outcome\n0,success\n1,\"", '\n', errNoRow, maxTraceGap + 2*maxTraceRow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest := &endless{b: tc.b}
			tr := newTraceReader(io.MultiReader(strings.NewReader(tc.start), rest))
			_, err := tr.next()
			require.NoError(t, err)
			_, err = tr.next()
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorContains(t, err, "after line 2: ")
			assert.Less(t, rest.read, tc.bound, "read before the error")
		})
	}
}

// TestTraceReader_longRowsAreRead: rows up to the bound are read, however
// many there are, and the error names the line after the last row read.
func TestTraceReader_longRowsAreRead(t *testing.T) {
	pad := strings.Repeat(" ", maxTraceRow-20)
	trace := strings.Repeat(pad+"1,success\n", 100) + "2,success," + strings.Repeat("1", 3*maxTraceRow) + "s\n"
	rows, _, err := readTrace([]byte(trace))
	assert.Len(t, rows, 100)
	assert.True(t, errors.Is(err, errLongRow), "%v", err)
	assert.ErrorContains(t, err, "after line 100: a line longer than 4096 bytes")
}
