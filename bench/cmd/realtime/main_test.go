package main

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// shortPhases is the standard scenario with phases of 300 ms: a run of
// 1.2 s. Its figures depend on the machine's timing, so the tests hold it
// only to what every run must give.
func shortPhases() []phase {
	cfg := config{rate: 2000, errors: 0.01, capacity: 0.5}
	for p := range cfg.lengths {
		cfg.lengths[p] = 300 * time.Millisecond
	}
	return cfg.phases()
}

func TestPlay_shortScenario(t *testing.T) {
	phases := shortPhases()
	res := play(phases, 2000, 1)
	for p, c := range res.phases {
		name := phaseNames[p]
		if c.offered != 600 {
			t.Errorf("%s: %d calls offered, want 600 (2,000/s for 300 ms)", name, c.offered)
		}
		if c.allowed+c.dropped != c.offered || c.succeeded > c.allowed {
			t.Errorf("%s: %+v: admitted and dropped must add up to offered, successes be admitted", name, c)
		}
		var sum counts
		for _, s := range res.slots[p] {
			sum.add(s)
		}
		if len(res.slots[p]) != 3 || sum != c {
			t.Errorf("%s: %d slots adding up to %+v, want 3 adding up to %+v", name, len(res.slots[p]), sum, c)
		}
	}
	if c := res.phases[outage]; c.succeeded != 0 || c.dropped == 0 {
		t.Errorf("outage: %+v: nothing succeeds, and 600 failures in a row are shed in part", c)
	}
	if c := res.phases[overload]; c.succeeded > 301 || c.succeeded == 0 {
		t.Errorf("overload: %d succeeded: the dependency serves 1,000/s, 301 calls in 300 ms at most", c.succeeded)
	}
	if res.lag < 0 || res.late < 0 || res.late > 2400 {
		t.Errorf("lag %v, %d calls late: out of range", res.lag, res.late)
	}
}

func TestRun_printsARowPerRun(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-runs", "2", "-healthy", "100ms", "-outage", "100ms", "-healed", "100ms", "-overload", "100ms"},
		&out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.HasPrefix(text, "srebreaker, default options, on the wall clock: 2000 calls/s; healthy 100ms, outage 100ms, "+
		"healed 100ms, overload 100ms at 50 % capacity; 1 % errors outside the outage\n") {
		t.Errorf("first line: %q", strings.SplitN(text, "\n", 2)[0])
	}
	var rows []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "| 1 |") || strings.HasPrefix(line, "| 2 |") {
			rows = append(rows, line)
		}
	}
	if len(rows) != 2 {
		t.Fatalf("want a row per run:\n%s", text)
	}
	for _, row := range rows {
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		if len(cells) != 10 {
			t.Errorf("%d cells, want 10: %s", len(cells), row)
		}
		if !strings.HasSuffix(cells[8], " ms") || !strings.HasSuffix(cells[9], " %") || !strings.HasPrefix(cells[3], "not within 100ms") {
			t.Errorf("a 100 ms phase has one slot, never 3 in a row; the lag is in ms: %s", row)
		}
	}
}

func TestRun_invalidFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-runs", "0"}, "-runs 0: at least 1"},
		{[]string{"-rate", "0"}, "-rate 0: must be between 1 and 100000 calls/s"},
		{[]string{"-errors", "2"}, "-errors 2: must be between 0 and 1"},
		{[]string{"-capacity", "-1"}, "-capacity -1: must be between 0 and 1"},
		{[]string{"-outage", "-1s"}, "-outage -1s: must not be negative"},
		{[]string{"-healthy", "0s", "-outage", "0s", "-healed", "0s", "-overload", "0s"}, "every phase is 0s long: nothing to run"},
	} {
		var out bytes.Buffer
		err := run(tc.args, &out, io.Discard)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed %q before failing", tc.args, out.String())
		}
	}
}

// A share counts as reached from the first slot of 3 in a row that hold
// it, slots without calls skipped, as in the simulator.
func TestSustainedFrom(t *testing.T) {
	admitted := func(c counts) bool { return pct(c.allowed, c.offered) >= 95 }
	s := func(allowed int) counts { return counts{offered: 100, allowed: allowed} }
	for _, tc := range []struct {
		slots []counts
		want  time.Duration // 0 for none
	}{
		{[]counts{s(100), s(95), s(99)}, 100 * time.Millisecond},
		{[]counts{s(96), s(50), s(97), {}, s(98), s(99)}, 300 * time.Millisecond},
		{[]counts{s(10), s(96), s(97)}, 0},
	} {
		got, found := sustainedFrom(tc.slots, admitted)
		if got != tc.want || found != (tc.want != 0) {
			t.Errorf("%v: %v, %v; want %v", tc.slots, got, found, tc.want)
		}
	}
}

func TestConfig_phases(t *testing.T) {
	cfg := config{rate: 2000, errors: 0.01, capacity: 0.5}
	ps := cfg.phases()
	if ps[outage].errors != 1 || ps[healed].errors != 0.01 || ps[overload].errors != 0.01 || ps[healthy].errors != 0.01 {
		t.Errorf("errors %v %v %v %v: 1 %% outside the outage, every call in it",
			ps[healthy].errors, ps[outage].errors, ps[healed].errors, ps[overload].errors)
	}
	if ps[overload].capacity != 1000 || !math.IsInf(ps[healed].capacity, 1) {
		t.Errorf("capacity %v while overloaded, %v healed: want 1000 and no limit", ps[overload].capacity, ps[healed].capacity)
	}
}
