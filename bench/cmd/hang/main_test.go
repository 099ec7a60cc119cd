package main

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// A call counts in the slot of the time it was due since its phase began:
// 0–99 ms in the first, 100 ms in the second.
func TestResult_record_slots(t *testing.T) {
	res := &result{}
	res.slots[hang] = make([]counts, 3)
	for _, since := range []time.Duration{0, 99 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond} {
		res.record(hang, since, time.Millisecond, counts{offered: 1, dropped: 1})
	}
	res.record(hang, 299*time.Millisecond, 12*time.Millisecond, counts{offered: 1, allowed: 1})
	want := []counts{{offered: 2, dropped: 2}, {offered: 1, dropped: 1}, {offered: 2, allowed: 1, dropped: 1}}
	for i, c := range res.slots[hang] {
		if c != want[i] {
			t.Errorf("slot %d: %+v, want %+v", i, c, want[i])
		}
	}
	if want := (counts{offered: 5, allowed: 1, dropped: 4}); res.phases[hang] != want {
		t.Errorf("phase: %+v, want %+v", res.phases[hang], want)
	}
	if res.lag != 12*time.Millisecond || res.late != 1 {
		t.Errorf("lag %v, %d late; want 12ms and 1 (10 ms or more)", res.lag, res.late)
	}
}

func TestResult_enter_peak(t *testing.T) {
	res := &result{}
	res.enter()
	res.enter()
	res.leave()
	res.enter()
	res.enter()
	res.leave()
	res.leave()
	if res.peak.Load() != 3 || res.inFlight.Load() != 1 {
		t.Errorf("peak %d, %d in flight; want 3 and 1", res.peak.Load(), res.inFlight.Load())
	}
}

// A share counts as reached from the first slot of 3 in a row that hold
// it, slots without calls skipped, as in the simulator.
func TestSustainedFrom(t *testing.T) {
	dropped := func(c counts) bool { return pct(c.dropped, c.offered) >= 90 }
	s := func(dropped int) counts { return counts{offered: 20, allowed: 20 - dropped, dropped: dropped} }
	for _, tc := range []struct {
		name  string
		slots []counts
		want  time.Duration // 0 for none
	}{
		{"from the first slot", []counts{s(18), s(20), s(19)}, 100 * time.Millisecond},
		{"a slot below breaks the run", []counts{s(0), s(18), s(17), s(18), s(20), s(20)}, 400 * time.Millisecond},
		{"empty slots skipped", []counts{s(5), s(19), {}, s(20), {}, s(18)}, 200 * time.Millisecond},
		{"two in a row are not enough", []counts{s(20), s(20), s(10), s(20), s(20)}, 0},
		{"no slots", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := sustainedFrom(tc.slots, dropped)
			if got != tc.want || found != (tc.want != 0) {
				t.Errorf("%v: %v, %v; want %v", tc.slots, got, found, tc.want)
			}
		})
	}
}

func TestResult_cells(t *testing.T) {
	lengths := [phaseCount]time.Duration{300 * time.Millisecond, 400 * time.Millisecond, 300 * time.Millisecond}
	res := &result{lag: 11500 * time.Microsecond, late: 2}
	res.peak.Store(42)
	res.phases = [phaseCount]counts{
		{offered: 60, allowed: 59, dropped: 1},
		{offered: 80, allowed: 20, dropped: 60},
		{offered: 60, allowed: 40, dropped: 20},
	}
	res.slots = [phaseCount][]counts{
		{{20, 20, 0}, {20, 19, 1}, {20, 20, 0}},
		{{20, 18, 2}, {20, 1, 19}, {20, 0, 20}, {20, 1, 19}},
		{{20, 0, 20}, {20, 20, 0}, {20, 20, 0}},
	}
	want := []string{"0.2 s", "25.0 %", "42", "not within 300ms", "1 (1.67 %)", "11.5 ms", "1.00 %"}
	got := res.cells(lengths)
	if len(got) != len(want) {
		t.Fatalf("%q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d: %q, want %q", i, got[i], want[i])
		}
	}

	// A phase left out has no figures.
	empty := &result{}
	got = empty.cells([phaseCount]time.Duration{})
	want = []string{"–", "–", "0", "–", "–", "0.0 ms", "0.00 %"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("no calls: cell %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// Every library admits the first call of a fresh breaker and takes its
// outcome.
func TestLibraries_admitWhenFresh(t *testing.T) {
	for _, l := range libraries {
		allow := l.new()
		done, ok := allow()
		if !ok {
			t.Errorf("%s: a fresh breaker dropped a call", l.name)
			continue
		}
		done(nil)
	}
}

func TestRun_invalidFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-runs", "0"}, "-runs 0: at least 1"},
		{[]string{"-rate", "0"}, "-rate 0: must be between 1 and 100000 calls/s"},
		{[]string{"-timeout", "0s"}, "-timeout 0s: must be positive"},
		{[]string{"-hang", "-1s"}, "-hang -1s: must not be negative"},
		{[]string{"-healthy", "0s", "-hang", "0s", "-healed", "0s"}, "every phase is 0s long: nothing to run"},
		{[]string{"-libs", "srebreaker,hystrix"}, `-libs: no library "hystrix" (know srebreaker, failsafe-adaptive, ` +
			`failsafe-classic, gobreaker, go-zero, aegis)`},
		{[]string{"-libs", "aegis,go-zero,aegis"}, "-libs: aegis twice"},
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
