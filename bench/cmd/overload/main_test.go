package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srebreaker/srebreaker/criticality"
)

// A schedule is the same for the same seed, runs at the rate asked for,
// and draws the levels in the proportions of mix.
func TestSchedule_rateAndMix(t *testing.T) {
	phases := []phase{{length: 10 * time.Second, multiple: 4}}
	a := schedule(rand.New(rand.NewPCG(1, 2)), phases, 200, false)
	b := schedule(rand.New(rand.NewPCG(1, 2)), phases, 200, false)
	if len(a) != len(b) || a[len(a)/2] != b[len(b)/2] {
		t.Fatal("two schedules from one seed differ")
	}
	// 8,000 calls expected; a Poisson count's σ is about 89.
	if n := len(a); math.Abs(float64(n)-8000) > 4*89 {
		t.Errorf("%d calls in 10 s at 800/s, want 8,000 ± 356", n)
	}
	var levels [4]int
	for i, c := range a {
		if i > 0 && c.at < a[i-1].at || c.at < 0 || c.at >= 10*time.Second {
			t.Fatalf("call %d due at %v: out of order or out of the phase", i, c.at)
		}
		if c.draw != 1 || c.phase != 0 {
			t.Fatalf("call %d: draw %v, phase %d; want 1 and 0", i, c.draw, c.phase)
		}
		levels[c.level.Index()]++
	}
	for l, want := range mix {
		if got := float64(levels[l]) / float64(len(a)); math.Abs(got-want) > 0.02 {
			t.Errorf("%v: %.3f of the calls, want %.2f ± 0.02", criticality.Sheddable+criticality.Level(l), got, want)
		}
	}
}

// The bursts hold 3× capacity for 200 ms of each 2 s, and the mean stays
// 0.9×: the rate between them is lowered to 2/3×.
func TestSchedule_bursts(t *testing.T) {
	phases := []phase{{length: 20 * time.Second, multiple: 0.9,
		burst: &burst{every: 2 * time.Second, length: 200 * time.Millisecond, multiple: 3}}}
	segs := segments(phases, 1000)
	if len(segs) != 20 || segs[0].to != 1800*time.Millisecond || segs[1].rate != 3000 ||
		math.Abs(segs[0].rate-2000.0/3) > 1e-6 {
		t.Fatalf("segments %+v: want 20, a burst of 3,000/s from 1.8 s in each 2 s, 666.7/s between", segs[:2])
	}
	a := schedule(rand.New(rand.NewPCG(3, 4)), phases, 1000, false)
	inBursts := 0
	for _, c := range a {
		if c.at%(2*time.Second) >= 1800*time.Millisecond {
			inBursts++
		}
	}
	// 18,000 calls, 6,000 of them in bursts.
	if math.Abs(float64(len(a))-18000) > 600 || math.Abs(float64(inBursts)-6000) > 350 {
		t.Errorf("%d calls, %d in bursts; want 18,000 and 6,000", len(a), inBursts)
	}
}

// The heavy-tailed service time has a mean of 1 and a 99.9th percentile
// about 50 times its median.
func TestSchedule_heavyTail(t *testing.T) {
	a := schedule(rand.New(rand.NewPCG(5, 6)), []phase{{length: 100 * time.Second, multiple: 1}}, 2000, true)
	draws := make([]time.Duration, len(a))
	sum := 0.0
	for i, c := range a {
		draws[i] = time.Duration(c.draw * 1e6)
		sum += c.draw
	}
	slices.Sort(draws)
	if mean := sum / float64(len(a)); math.Abs(mean-1) > 0.03 {
		t.Errorf("mean draw %.3f, want 1 ± 0.03", mean)
	}
	if r := float64(percentile(draws, 0.999)) / float64(percentile(draws, 0.5)); r < 40 || r > 60 {
		t.Errorf("p99.9 / median = %.1f, want about 50", r)
	}
}

func TestDrawLevel(t *testing.T) {
	for _, tc := range []struct {
		u    float64
		want criticality.Level
	}{
		{0, criticality.Sheddable}, {0.299, criticality.Sheddable}, {0.3, criticality.SheddablePlus},
		{0.5, criticality.Critical}, {0.899, criticality.Critical}, {0.9, criticality.CriticalPlus}, {0.9999, criticality.CriticalPlus},
	} {
		if got := drawLevel(tc.u); got != tc.want {
			t.Errorf("drawLevel(%v) = %v, want %v", tc.u, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	d := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x)
		}
		return out
	}
	for _, tc := range []struct {
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{d(7), 0.99, 7},
		{d(1, 2, 3, 4), 0.5, 2},
		{d(1, 2, 3, 4), 0.51, 3},
		{d(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10},
		{d(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.9, 9},
	} {
		if got := percentile(tc.sorted, tc.q); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.sorted, tc.q, got, tc.want)
		}
	}
}

func TestSettledAt(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  string // one slot a character: x bad, . good
		want time.Duration
		ok   bool
	}{
		{"never bad", "....", 0, true},
		{"bad at first", "xx..", 200 * time.Millisecond, true},
		{"a relapse counts", "x..x..", 400 * time.Millisecond, true},
		{"bad to the end", "..x.xx", 0, false},
		{"empty", "", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := make([]bool, len(tc.bad))
			for i, c := range tc.bad {
				bad[i] = c == 'x'
			}
			got, ok := settledAt(bad)
			if got != tc.want || ok != tc.ok {
				t.Errorf("settledAt(%s) = %v, %v; want %v, %v", tc.bad, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// The transition times on hand-written runs: rejections that stop, a p99
// that comes back, a rate that reaches the new capacity.
func TestTransitionTime(t *testing.T) {
	ms := time.Millisecond
	step := scenario{measured: 1, phases: []phase{{length: time.Second, multiple: 4}, {length: time.Second, multiple: 0.5}}}

	t.Run("rejections stop", func(t *testing.T) {
		sc := step
		sc.transition = rejectionsStop
		r := &record{}
		for _, at := range []time.Duration{500 * ms, 1010 * ms, 1250 * ms, 1400 * ms} {
			r.arrivals = append(r.arrivals, arrival{at: at})
			r.calls = append(r.calls, call{outcome: rejected})
		}
		r.arrivals = append(r.arrivals, arrival{at: 1900 * ms})
		r.calls = append(r.calls, call{outcome: served})
		if d, ok := transitionTime(sc, r, 200, 0); !ok || d != 500*ms {
			t.Errorf("got %v, %v; want 500ms (the last rejection due at 1.4 s, in the 5th slot)", d, ok)
		}
	})

	t.Run("p99 back", func(t *testing.T) {
		sc := step
		sc.transition = p99Back
		// served returns a record of one call served every gap of the
		// measured phase: 900 ms of latency until 1.3 s, 20 ms after.
		served := func(gap time.Duration) *record {
			r := &record{}
			for at := 1000 * ms; at < 2000*ms; at += gap {
				lat := 20 * ms
				if at < 1300*ms {
					lat = 900 * ms
				}
				r.arrivals = append(r.arrivals, arrival{at: at - lat})
				r.calls = append(r.calls, call{outcome: served, latency: lat, done: at})
			}
			return r
		}
		// A call every 2 ms: the 500 ms windows hold 250 calls, and a
		// slow one up to the window ending at 1.7 s (1.298 s is in
		// (1.2 s, 1.7 s]).
		r := served(2 * ms)
		if d, ok := transitionTime(sc, r, 200, 50*ms); !ok || d != 700*ms {
			t.Errorf("got %v, %v; want 700ms", d, ok)
		}
		var b strings.Builder
		printWindows(&b, sc, "ours", r, 50*ms)
		for _, want := range []string{"to 700ms: 250 served, p99 900ms", "to 800ms: 250 served, p99 20ms",
			"past the bound: ended at 298ms, CRITICAL, 900ms"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("printWindows wrote\n%s\nwant a line with %q", b.String(), want)
			}
		}
		for i := range 3 { // 3 slow calls of 250 in the last window: past its p99
			r.calls[len(r.calls)-1-i].latency = time.Second
		}
		if _, ok := transitionTime(sc, r, 200, 50*ms); ok {
			t.Error("slow calls in the last slot: want not settled")
		}

		// A call every 10 ms, all fast but the last: the last window's
		// 50 calls are read with the 50 before, whose p99 is their
		// second slowest; one slow call of 50 would be its p99.
		r = served(10 * ms)
		for i := range r.calls {
			r.calls[i].latency = 20 * ms
		}
		r.calls[len(r.calls)-1].latency = time.Second
		if d, ok := transitionTime(sc, r, 200, 50*ms); !ok || d != 0 {
			t.Errorf("got %v, %v; want 0s: one slow call of 100", d, ok)
		}
		b.Reset()
		printWindows(&b, sc, "ours", r, 50*ms)
		if want := "to 1s: 100 served, p99 20ms, slowest 1s"; !strings.Contains(b.String(), want) {
			t.Errorf("printWindows wrote\n%s\nwant a line with %q", b.String(), want)
		}
	})

	t.Run("capacity served", func(t *testing.T) {
		sc := scenario{measured: 1, transition: capacityServed,
			phases: []phase{{length: time.Second, multiple: 1.5}, {length: 2 * time.Second, multiple: 1.5, scale: 2}}}
		r := &record{}
		// New capacity 100/s: nothing served for 400 ms, then one every 10 ms.
		for at := 1400 * ms; at < 3000*ms; at += 10 * ms {
			r.arrivals = append(r.arrivals, arrival{at: at})
			r.calls = append(r.calls, call{outcome: served, done: at})
		}
		// The windows since the change (at most 1 s) fall short of 95 % of
		// 100/s until the empty stretch has left them: the last short one
		// ends at 2.3 s, (1.3 s, 2.3 s] holding 91 calls.
		if d, ok := transitionTime(sc, r, 200, 0); !ok || d != 1300*ms {
			t.Errorf("got %v, %v; want 1.3s", d, ok)
		}
	})
}

func TestTable_markdown(t *testing.T) {
	tr := 1.25
	tab := table{Title: "Step", Notes: []string{"a note"}, Caption: "after", Rows: []row{{
		Scenario: "2×", Contender: "static", AchievedMultiple: 1.987, ServedShare: 85.04, ShareOf: "capacity",
		P50: 21.2, P99: 24.9, Rejected: 12345, TimedOut: 0, Gone: 1234567, Levels: [4]float64{-1, 20, 30, 40.05},
		Transition: &tr, LagP99: 1.25, Offered: 1, SlotsBusy: 99.46, HoldPast: 3.04,
	}}}
	want := "### Step\n\na note\n\n" +
		"| offered | contender | achieved | served within the timeout | p50 / p99 of served | rejected | timed out | work for callers gone | slots busy, a hold past S | " +
		"CRITICAL_PLUS served | CRITICAL served | SHEDDABLE_PLUS served | SHEDDABLE served | after | driver's lag, p99 |\n" +
		strings.Repeat("|---", 15) + "|\n" +
		"| 2× | static | 1.99× | 85.0 % of capacity | 21 / 25 ms | 12,345 | 0 | 1,234,567 | 99.5 %, +3.0 % | 40.0 % | 30.0 % | 20.0 % | – | 1.2 s | 1.2 ms |\n"
	if got := tab.markdown(); got != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", got, want)
	}
	never := -1.0
	tab.Rows[0].Transition = &never
	if got := tab.markdown(); !strings.Contains(got, "| not within the phase |") {
		t.Errorf("a transition never reached: %s", got)
	}
}

// The slots' busy share counts a hold's part within the window only; the
// overshoot, the holds that began in it.
func TestBusy(t *testing.T) {
	ms := time.Millisecond
	holds := []hold{
		{from: 0, to: 150 * ms, asked: 100 * ms},        // half in the window, began before it
		{from: 100 * ms, to: 206 * ms, asked: 100 * ms}, // all in it, 6 % past
		{from: 250 * ms, to: 354 * ms, asked: 100 * ms}, // 4 % past, half in it
		{from: 400 * ms, to: 500 * ms, asked: 100 * ms}, // after it
	}
	share, past := busy(holds, 2, 100*ms, 300*ms)
	// Held within [100, 300) ms: 50 + 106 + 50 = 206 of 2 × 200 ms.
	if math.Abs(share-51.5) > 1e-9 || math.Abs(past-5) > 1e-9 {
		t.Errorf("busy = %.3f %%, %+.3f %%; want 51.5 %%, +5 %%", share, past)
	}
	if share, past := busy(nil, 0, 0, time.Second); share != 0 || past != 0 {
		t.Errorf("no slots: %v, %v; want 0, 0", share, past)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParse_rejects(t *testing.T) {
	for _, args := range [][]string{
		{"-step", "100ms"}, {"-scenarios", "nope"}, {"-contenders", "nope"}, {"-configs", "4x"}, {"-w", "0"}, {"extra"},
		{"-steady", "0"}, {"-steady", "1.05,x"}, {"-steady", "NaN"},
	} {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("parse(%q): want an error", args)
		}
	}
	cfg, err := parse([]string{"-quick", "-configs", "8x10ms"}, io.Discard)
	if err != nil || cfg.step != 2*time.Second || len(cfg.configs) != 1 || cfg.configs[0] != (shape{8, 10 * time.Millisecond}) {
		t.Errorf("parse(-quick -configs 8x10ms) = %+v, %v", cfg, err)
	}
	if !slices.Equal(cfg.steady, []float64{0.5, 0.9, 2, 4}) {
		t.Errorf("steady rates by default: %v", cfg.steady)
	}
	cfg, err = parse([]string{"-steady", "1.05, 1.5"}, io.Discard)
	if err != nil || !slices.Equal(cfg.steady, []float64{1.05, 1.5}) || len(steady(time.Second, cfg.steady)) != 2 {
		t.Errorf("parse(-steady 1.05,1.5) = %v, %v", cfg.steady, err)
	}
}

// The unloaded p99 is taken over unloadedCalls at least: 2 s of 2 slots
// of 200 ms at 0.5× hold 10 calls, whose p99 is their slowest.
func TestUnloadedSpan(t *testing.T) {
	cfg := config{step: 10 * time.Second}
	for _, tc := range []struct {
		sh   shape
		want time.Duration
	}{
		{shape{4, 20 * time.Millisecond}, 2 * time.Second},   // 100 calls/s at 0.5×
		{shape{32, 5 * time.Millisecond}, 2 * time.Second},   // 3,200 calls/s
		{shape{2, 200 * time.Millisecond}, 40 * time.Second}, // 5 calls/s
	} {
		if got := cfg.unloadedSpan(tc.sh); got != tc.want {
			t.Errorf("unloadedSpan(%v) = %v, want %v", tc.sh, got, tc.want)
		}
	}
	quick := config{step: 100 * time.Millisecond}
	if got := quick.unloadedSpan(shape{4, 20 * time.Millisecond}); got != 2*time.Second {
		t.Errorf("unloadedSpan at a step of 100ms = %v, want 2s (200 calls)", got)
	}
}

// A short run, in process, of the static limit: the rows every run must
// give, whatever the machine's timing.
func TestRun_inprocShort(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-step", "500ms", "-scenarios", "steady", "-contenders", "static", "-inproc", "-w", "4", "-s", "5ms"},
		&out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"### Steady load, 4 × 5ms", "| 4× | static |", "| 0.5× | static |", "in process"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// A resource's hold is shortened by the median of the timer's overruns,
// within [0, S/4].
func TestMedianOverrun(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		name    string
		samples []time.Duration
		want    time.Duration
	}{
		{"median", []time.Duration{900 * us, 500 * us, 40 * time.Millisecond, 600 * us, 550 * us}, 600 * us},
		{"early wakes", []time.Duration{-us, -2 * us, 0}, 0},
		{"a busy machine", []time.Duration{9 * time.Millisecond, 8 * time.Millisecond, 7 * time.Millisecond}, 5 * time.Millisecond},
		{"none", nil, 0},
	} {
		if got := medianOverrun(c.samples, 20*time.Millisecond); got != c.want {
			t.Errorf("%s: medianOverrun = %v; want %v", c.name, got, c.want)
		}
	}
}

// Work done for a caller that had gone is noted with the call's index,
// and counts for the calls that arrived in the measured phases only, as
// every other figure of a row: a call of the warm-up served after its
// caller left, once the phases began, is not theirs.
func TestGone_countsByArrival(t *testing.T) {
	res := newResource(1, time.Microsecond, time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, h := range []string{"0", "2", "nope"} {
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		req.Header.Set(callHeader, h)
		res.ServeHTTP(httptest.NewRecorder(), req)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil) // its caller waits
	req.Header.Set(callHeader, "1")
	res.ServeHTTP(httptest.NewRecorder(), req)
	if want := []int{0, 2, -1}; !slices.Equal(res.gone, want) {
		t.Fatalf("gone = %v, want %v", res.gone, want)
	}

	arrivals := []arrival{{at: time.Second}, {at: 2 * time.Second}, {at: 3 * time.Second}}
	for _, c := range []struct {
		from time.Duration
		want int64
	}{{0, 3}, {2 * time.Second, 2}, {4 * time.Second, 1}} {
		if got := goneSince(res.gone, arrivals, c.from); got != c.want {
			t.Errorf("goneSince(from %v) = %d, want %d", c.from, got, c.want)
		}
	}
}
