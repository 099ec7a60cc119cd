package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseScenario_allFields(t *testing.T) {
	s, err := parseScenario(strings.NewReader(`{
		"description": "ignored",
		"phases": [
			{"name": "warm", "role": "healthy", "duration": "1m30s", "rate": 12.5, "errors": 0.02,
			 "capacity": 40, "latency": "250ms"},
			{"duration": "2s", "rate": 0}
		]
	}`))
	require.NoError(t, err)
	require.Len(t, s.phases, 2)
	assert.Equal(t, phase{name: "warm", role: roleHealthy, length: 90 * time.Second, rate: 12.5, errors: 0.02,
		capacity: 40, latency: 250 * time.Millisecond}, s.phases[0])
	assert.Equal(t, phase{name: "phase 2", length: 2 * time.Second, capacity: math.Inf(1)}, s.phases[1],
		"defaults: a name from the position, no errors, no capacity limit, no latency, no role")
	assert.Equal(t, int64(1125), s.phases[0].requests(), "12.5/s over 90 s")
}

func TestLoadScenario_standardIsTheBuiltIn(t *testing.T) {
	file, err := loadScenario("testdata/standard.json")
	require.NoError(t, err)
	builtIn, err := defaultConfig().scenario()
	require.NoError(t, err)
	assert.Equal(t, builtIn.phases, file.phases)
	assert.Equal(t, "testdata/standard.json", file.source)
}

func TestLoadScenario_testdataIsValid(t *testing.T) {
	for _, path := range []string{"testdata/standard.json", "testdata/standard-no-errors-after-outage.json", "testdata/slow-brownout.json"} {
		_, err := loadScenario(path)
		assert.NoError(t, err, path)
	}
	_, err := loadScenario("testdata/missing.json")
	assert.ErrorContains(t, err, "testdata/missing.json")
}

func TestParseScenario_invalid(t *testing.T) {
	phase := func(fields string) string { return `{"phases": [{"name": "p", ` + fields + `}]}` }
	for _, tc := range []struct {
		name, file, want string
	}{
		{"empty file", ``, "empty file: expected a JSON object with a phases list"},
		{"no phases", `{"phases": []}`, "no phases: a scenario needs at least one"},
		{"syntax", "{\"phases\": [\n{\"name\": \"p\",,}]}", `line 2: invalid character ',' looking for beginning of object key string`},
		{"unknown field", phase(`"duration": "1s", "rate": 1, "eror": 0.5`), `unknown field "eror"`},
		{"wrong type", "{\"phases\": [\n{\"duration\": \"1s\", \"rate\": \"fast\"}]}", `line 2: phases.rate: a number, not a JSON string`},
		{"trailing data", `{"phases": []} {}`, "line 1: unexpected data after the scenario object"},
		{"truncated", `{"phases": [`, "unexpected end of file"},
		{"missing duration", phase(`"rate": 1`), `phase 1 ("p"): duration: missing (a Go duration such as "10s" or "1m30s")`},
		{"missing rate", phase(`"duration": "1s"`), `phase 1 ("p"): rate: missing (requests offered per second)`},
		{"bad duration", phase(`"duration": "10", "rate": 1`), `phase 1 ("p"): duration "10": not a Go duration such as "10s" or "1m30s"`},
		{"zero duration", phase(`"duration": "0s", "rate": 1`), `phase 1 ("p"): duration 0s: must be positive`},
		{"negative duration", phase(`"duration": "-1s", "rate": 1`), `phase 1 ("p"): duration -1s: must not be negative`},
		{"negative rate", phase(`"duration": "1s", "rate": -1`), `phase 1 ("p"): rate -1: must be between 0 and 1000000 requests/s`},
		{"rate too high", phase(`"duration": "1s", "rate": 2e6`), `phase 1 ("p"): rate 2e+06: must be between 0 and 1000000 requests/s`},
		{"errors above 1", phase(`"duration": "1s", "rate": 1, "errors": 1.5`), `phase 1 ("p"): errors 1.5: must be between 0 and 1`},
		{"negative capacity", phase(`"duration": "1s", "rate": 1, "capacity": -1`),
			`phase 1 ("p"): capacity -1: must be at least 0 requests/s (leave it out for no limit)`},
		{"bad latency", phase(`"duration": "1s", "rate": 1, "latency": "fast"`), `phase 1 ("p"): latency "fast": not a Go duration such as "250ms"`},
		{"negative latency", phase(`"duration": "1s", "rate": 1, "latency": "-5ms"`), `phase 1 ("p"): latency -5ms: must not be negative`},
		{"latency too long", phase(`"duration": "1s", "rate": 1, "latency": "2h"`), `phase 1 ("p"): latency 2h0m0s: at most 1h0m0s`},
		{"unknown role", phase(`"duration": "1s", "rate": 1, "role": "down"`),
			`phase 1 ("p"): role "down": must be one of healthy, outage, healed, overload`},
		{"role twice", `{"phases": [{"duration": "1s", "rate": 1, "role": "outage"}, {"name": "again", "duration": "1s", "rate": 1, "role": "outage"}]}`,
			`phase 2 ("again"): role "outage": already given to phase 1; each role may be given once`},
		{"long name", `{"phases": [{"name": "` + strings.Repeat("x", 33) + `", "duration": "1s", "rate": 1}]}`,
			`phase 1 ("` + strings.Repeat("x", 33) + `"): name: at most 32 characters`},
		{"too long", `{"phases": [{"duration": "20h", "rate": 1}, {"duration": "5h", "rate": 1}]}`,
			"phases add up to 25h0m0s: at most 24h can be simulated"},
		{"too many requests", phase(`"duration": "2m", "rate": 1000000`), "phases make 120000000 requests: at most 100000000 can be simulated"},
		{"a day at the highest rate", phase(`"duration": "24h", "rate": 1000000`),
			"phases make 86400000000 requests: at most 100000000 can be simulated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseScenario(strings.NewReader(tc.file))
			assert.EqualError(t, err, tc.want)
		})
	}
}

// JSON has no NaN, but a scenario built in code can; validate catches it.
func TestPhase_validate_NaN(t *testing.T) {
	ok := phase{name: "p", length: time.Second, rate: 1, capacity: math.Inf(1)}
	require.NoError(t, ok.validate())
	for _, tc := range []struct {
		change func(*phase)
		want   string
	}{
		{func(p *phase) { p.rate = math.NaN() }, "rate NaN: must be between 0 and 1000000 requests/s"},
		{func(p *phase) { p.rate = math.Inf(1) }, "rate +Inf: must be between 0 and 1000000 requests/s"},
		{func(p *phase) { p.errors = math.NaN() }, "errors NaN: must be between 0 and 1"},
		{func(p *phase) { p.capacity = math.NaN() }, "capacity NaN: must be at least 0 requests/s (leave it out for no limit)"},
	} {
		p := ok
		tc.change(&p)
		assert.EqualError(t, p.validate(), tc.want)
	}
}

func TestPhase_arrival(t *testing.T) {
	p := phase{length: time.Second, rate: 3}
	assert.Equal(t, int64(3), p.requests())
	assert.Equal(t, []time.Duration{0, 333_333_333, 666_666_666},
		[]time.Duration{p.arrival(0), p.arrival(1), p.arrival(2)}, "integer rates: exact nanoseconds, rounded down")

	p = phase{length: 3 * time.Second, rate: 0.5}
	assert.Equal(t, int64(1), p.requests())
	assert.Equal(t, 2*time.Second, p.arrival(1))
}

func TestScenario_phaseAt(t *testing.T) {
	s := scenario{phases: []phase{{length: time.Second}, {length: 0}, {length: 2 * time.Second}}}
	assert.Equal(t, 0, s.phaseAt(999*time.Millisecond))
	assert.Equal(t, 2, s.phaseAt(time.Second), "the empty phase is skipped")
	assert.Equal(t, 2, s.phaseAt(time.Hour), "past the end: the last phase")
}
