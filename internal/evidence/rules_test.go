package evidence

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// judged are the breaker's default settings, for the rules' table tests.
var judged = Settings{K: 1.5, Protection: 5, Aggression: 1.5, CountDrops: true, TrustRecent: true,
	Evidence: 40, Buckets: 20, Horizon: 30}

func TestSettings_Probability_aggression(t *testing.T) {
	for _, tc := range []struct {
		name       string
		aggression float64
		num, den   float64
		want       float64
	}{
		{name: "1 leaves the ratio", aggression: 1, num: 1, den: 4, want: 0.25},
		{name: "1.5 raises it", aggression: 1.5, num: 1, den: 4, want: math.Pow(0.25, 1/1.5)},
		{name: "0 stays 0", aggression: 1.5, num: 0, den: 4, want: 0},
		{name: "1 stays 1", aggression: 2, num: 4, den: 4, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Aggression: tc.aggression}
			assert.InDelta(t, tc.want, s.Probability(tc.num, tc.den), 1e-12)
		})
	}
}

func TestSettings_countedDrops(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		countDrops, overloaded bool
		picked                 bool
		drops, admitted        float64
		want                   float64
	}{
		{name: "off", drops: 100, admitted: 10, want: 0},
		{name: "fewer than the cap", countDrops: true, drops: 3, admitted: 10, want: 3},
		{name: "capped at K−1 per admitted call", countDrops: true, drops: 100, admitted: 10, want: 5},
		{name: "none admitted, none counted", countDrops: true, drops: 100, want: 0},
		{name: "a run picked out, not overloaded: capped", countDrops: true, picked: true, drops: 100, admitted: 10, want: 5},
		{name: "overloaded: every drop", countDrops: true, overloaded: true, drops: 100, admitted: 10, want: 100},
		{name: "overloaded, none admitted: every drop", countDrops: true, overloaded: true, drops: 100, want: 100},
		{name: "overloaded, a run picked out: capped", countDrops: true, overloaded: true, picked: true, drops: 100, admitted: 10, want: 5},
		{name: "overloaded, drops not counted", overloaded: true, drops: 100, admitted: 10, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{K: 1.5, CountDrops: tc.countDrops, Overloaded: tc.overloaded}
			assert.InDelta(t, tc.want, s.countedDrops(tc.drops, tc.admitted, tc.picked), 1e-12)
		})
	}
}

func TestSettings_readBack(t *testing.T) {
	for _, tc := range []struct {
		name          string
		off           Rules
		evidence      int64
		reach, window Bucket
		want          Bucket
	}{
		{name: "light traffic reads back", evidence: 40, window: Bucket{1, 2, 3},
			reach: Bucket{20, 20, 1}, want: Bucket{20, 20, 3}},
		{name: "the read-back drops when they are more", evidence: 40, window: Bucket{1, 2, 3},
			reach: Bucket{20, 20, 9}, want: Bucket{20, 20, 9}},
		{name: "a window of Evidence calls is judged alone", evidence: 40, window: Bucket{20, 20, 0},
			reach: Bucket{30, 30, 0}, want: Bucket{20, 20, 0}},
		{name: "nothing more read back", evidence: 40, window: Bucket{1, 2, 3}, want: Bucket{1, 2, 3}},
		{name: "without Evidence", window: Bucket{1, 2, 3}, reach: Bucket{20, 20, 1}, want: Bucket{1, 2, 3}},
		{name: "off", off: RuleReadBack, evidence: 40, window: Bucket{1, 2, 3}, reach: Bucket{20, 20, 1},
			want: Bucket{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Evidence: tc.evidence}.Without(tc.off)
			assert.Equal(t, tc.want, s.readBack(&Summary{Reach: tc.reach}, Bucket{}, tc.window))
		})
	}
}

func TestSettings_down(t *testing.T) {
	for _, tc := range []struct {
		name                string
		off                 Rules
		successes, failures int64
		want                bool
	}{
		{name: "failures past protection", failures: 6, want: true},
		{name: "within protection", failures: 5, want: false},
		{name: "a success breaks the run", successes: 1, failures: 6, want: false},
		{name: "off", off: RuleDown, failures: 6, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := judged.Without(tc.off)
			assert.Equal(t, tc.want, s.down(tc.successes, tc.failures))
		})
	}
}

func TestSettings_unlikely(t *testing.T) {
	for _, tc := range []struct {
		name     string
		off      Rules
		evidence int64
		n        int64
		buckets  int64
		counts   Bucket
		want     bool
	}{
		{name: "6 failures in a row from 1 % failing", evidence: 40, n: 6, counts: Bucket{99, 7, 0}, want: true},
		{name: "6 in a row from a fifth failing", evidence: 40, n: 6, counts: Bucket{80, 26, 0}, want: false},
		{name: "9 in a row from a fifth failing", evidence: 40, n: 9, counts: Bucket{80, 29, 0}, want: true},
		{name: "a run that spans a window", evidence: 40, n: 6, buckets: 20, counts: Bucket{80, 26, 0}, want: true},
		{name: "no success to set aside", evidence: 40, n: 6, counts: Bucket{0, 26, 0}, want: true},
		{name: "no failure besides the run's", evidence: 40, n: 6, counts: Bucket{80, 6, 0}, want: true},
		{name: "without Evidence", n: 6, counts: Bucket{80, 26, 0}, want: true},
		{name: "off", off: RuleUnlikely, evidence: 40, n: 6, counts: Bucket{80, 26, 0}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Evidence: tc.evidence, Buckets: 20}.Without(tc.off)
			assert.Equal(t, tc.want, s.unlikely(tc.n, tc.buckets, tc.counts))
		})
	}
}

func TestSettings_downFailures(t *testing.T) {
	for _, tc := range []struct {
		name           string
		off            Rules
		evidence       int64
		window, counts Bucket
		want           float64
	}{
		{name: "the window's, when more", evidence: 40, window: bad(30), counts: bad(33), want: 30},
		{name: "up to Evidence/2 read back", evidence: 40, window: bad(6), counts: bad(33), want: 20},
		{name: "all read back, when fewer", evidence: 40, window: bad(6), counts: bad(12), want: 12},
		{name: "without Evidence", window: bad(6), counts: bad(33), want: 6},
		{name: "off", off: RuleDownFloor, evidence: 40, window: bad(6), counts: bad(33), want: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Evidence: tc.evidence}.Without(tc.off)
			assert.InDelta(t, tc.want, s.downFailures(tc.window, tc.counts), 0)
		})
	}
}

func TestSettings_unprotected(t *testing.T) {
	for _, tc := range []struct {
		name        string
		off         Rules
		evidence    int64
		downBuckets int64
		calls       int64 // the down run's failures with the window's drops
		want        bool
	}{
		{name: "a down run over a window", evidence: 40, downBuckets: 20, want: true},
		{name: "a shorter one", evidence: 40, downBuckets: 19, want: false},
		{name: "a shorter one of twice protection's calls and one", evidence: 40, downBuckets: 5, calls: 11, want: true},
		{name: "of twice protection's calls", evidence: 40, downBuckets: 5, calls: 10, want: false},
		{name: "without Evidence", downBuckets: 20, calls: 11, want: false},
		{name: "off", off: RuleUnprotected, evidence: 40, downBuckets: 20, calls: 11, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Evidence: tc.evidence, Buckets: 20, Protection: 5}.Without(tc.off)
			assert.Equal(t, tc.want, s.unprotected(&Summary{run: run{downBuckets: tc.downBuckets}}, tc.calls))
		})
	}
}

func TestSettings_up(t *testing.T) {
	for _, tc := range []struct {
		name      string
		off       Rules
		successes int64
		want      bool
	}{
		{name: "successes past protection", successes: 6, want: true},
		{name: "within protection", successes: 5, want: false},
		{name: "off", off: RuleUp, successes: 6, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := judged.Without(tc.off)
			assert.Equal(t, tc.want, s.up(tc.successes))
		})
	}
}

func TestSettings_recovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		off      Rules
		evidence int64
		r        run
		want     Bucket
		ok       bool
	}{
		{name: "its own calls and the live bucket's", evidence: 40, r: run{rec: Bucket{100, 1, 0}, recBuckets: 2},
			want: Bucket{101, 1, 1}, ok: true},
		{name: "none", evidence: 40},
		{name: "without Evidence", r: run{rec: Bucket{100, 1, 0}, recBuckets: 2}},
		{name: "off", off: RuleRecovery, evidence: 40, r: run{rec: Bucket{100, 1, 0}, recBuckets: 2}},
		{name: "begun in the live bucket, its drops left out", evidence: 40, r: run{down: 30, downBuckets: 20},
			want: Bucket{1, 0, 0}, ok: true},
		{name: "not after a down run shorter than a window", evidence: 40, r: run{down: 30, downBuckets: 19}},
		{name: "live, off", off: RuleRecovery, evidence: 40, r: run{down: 30, downBuckets: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Evidence: tc.evidence, Buckets: 20}.Without(tc.off)
			got, ok := s.recovery(&Summary{run: tc.r}, Bucket{1, 0, 1})
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSettings_shifted(t *testing.T) {
	for _, tc := range []struct {
		name         string
		off          Rules
		evidence     int64
		base, newest Bucket
		want         bool
	}{
		// 40 calls, 4 failing, against 1 %: 3.6 over an expected 0.4,
		// with a standard deviation of 0.63.
		{name: "fails clearly more", evidence: 40, base: Bucket{990, 10, 0}, newest: Bucket{36, 4, 0}, want: true},
		{name: "within 3 standard deviations", evidence: 40, base: Bucket{990, 10, 0}, newest: Bucket{38, 2, 0}},
		{name: "too few calls", evidence: 40, base: Bucket{990, 10, 0}, newest: Bucket{20, 19, 0}},
		{name: "fails less", evidence: 40, base: Bucket{500, 500, 0}, newest: Bucket{40, 0, 0}},
		{name: "without Evidence", base: Bucket{990, 10, 0}, newest: Bucket{36, 4, 0}},
		{name: "off", off: RuleShift, evidence: 40, base: Bucket{990, 10, 0}, newest: Bucket{36, 4, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{Evidence: tc.evidence}.Without(tc.off)
			assert.Equal(t, tc.want, s.shifted(tc.base, tc.newest))
		})
	}
}

func TestSettings_fleetProbe(t *testing.T) {
	down := run{downBuckets: 20}
	for _, tc := range []struct {
		name       string
		off        Rules
		fleet, own Summary
		num, den   float64
		ok         bool
	}{
		{name: "the others' share of the drops", fleet: Summary{Window: Bucket{Drops: 90}, run: down},
			own: Summary{Window: Bucket{Drops: 9}}, num: 81, den: 91, ok: true},
		{name: "alone in its fleet, it probes as a breaker alone", fleet: Summary{Window: Bucket{Drops: 9}, run: down},
			own: Summary{Window: Bucket{Drops: 9}}, num: 0, den: 1, ok: true},
		{name: "calls admitted", fleet: Summary{Window: Bucket{Failures: 1, Drops: 90}, run: down}},
		{name: "down less than a window", fleet: Summary{Window: Bucket{Drops: 90}, run: run{downBuckets: 19}}},
		{name: "off", off: RuleFleetProbe, fleet: Summary{Window: Bucket{Drops: 90}, run: down},
			own: Summary{Window: Bucket{Drops: 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := judged.Without(tc.off)
			num, den, ok := s.fleetProbe(&tc.fleet, Bucket{}, &tc.own, Bucket{})
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, [2]float64{tc.num, tc.den}, [2]float64{num, den})
		})
	}
}

func TestSettings_ownsWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  Rules
		own  Summary
		want bool
	}{
		{name: "Evidence calls in its window", own: Summary{Window: Bucket{30, 10, 0}}, want: true},
		{name: "Evidence calls read back", own: Summary{Window: Bucket{3, 1, 0}, Reach: Bucket{30, 10, 0}}, want: true},
		{name: "too few", own: Summary{Window: Bucket{30, 9, 0}}},
		{name: "off", off: RuleFleetOwn, own: Summary{Window: Bucket{30, 10, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := judged.Without(tc.off)
			assert.Equal(t, tc.want, s.ownsWindow(&tc.own, Bucket{}))
		})
	}
}

func TestSettings_ownsUp(t *testing.T) {
	up := run{up: 40}
	for _, tc := range []struct {
		name string
		off  Rules
		own  Summary
		live Bucket
		want bool
	}{
		{name: "its own run up", own: Summary{Window: Bucket{40, 1, 0}, run: up}, want: true},
		{name: "a failure in the live bucket", own: Summary{Window: Bucket{40, 1, 0}, run: up}, live: bad(1)},
		{name: "too few calls", own: Summary{Window: Bucket{30, 0, 0}, run: run{up: 30}}},
		{name: "off", off: RuleFleetOwnUp, own: Summary{Window: Bucket{40, 1, 0}, run: up}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := judged.Without(tc.off)
			assert.Equal(t, tc.want, s.ownsUp(&tc.own, tc.live))
		})
	}
}

func bad(n int64) Bucket { return Bucket{Failures: n} }

func TestSettings_recovery_liveFailure(t *testing.T) {
	s := Settings{Evidence: 40, Buckets: 20}
	_, ok := s.recovery(&Summary{run: run{down: 30, downBuckets: 20}}, Bucket{1, 1, 0})
	assert.False(t, ok, "a live bucket that failed too begins no recovery before it finishes")
}
