package breaker

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// plain is the card's formula: no refinement.
var plain = formula{k: 1.5, protection: 5, aggression: 1}

func TestFormula_ratio_plain(t *testing.T) {
	for _, tc := range []struct {
		name       string
		f          formula
		succ, fail int64
		want       float64
	}{
		{name: "empty window", f: plain, want: 0},
		{name: "healthy", f: formula{k: 2, protection: 5, aggression: 1}, succ: 100, want: 0},
		{name: "failures within protection", f: plain, fail: 5, want: 0},
		{name: "first failure past protection", f: plain, fail: 6, want: 1.0 / 7},
		{name: "all failing", f: plain, fail: 100, want: 95.0 / 101},
		{name: "one third succeeding", f: plain, succ: 40, fail: 80, want: 55.0 / 121},
		{name: "exactly at the K boundary", f: formula{k: 1.5, aggression: 1}, succ: 100, fail: 50, want: 0},
		{name: "just past the K boundary", f: formula{k: 1.5, aggression: 1}, succ: 100, fail: 51, want: 1.0 / 152},
		{name: "K 1, no protection", f: formula{k: 1, aggression: 1}, succ: 5, fail: 5, want: 5.0 / 11},
		{name: "huge counts", f: plain, fail: math.MaxInt32, want: (math.MaxInt32 - 5.0) / (math.MaxInt32 + 1.0)},
		{name: "drops ignored", f: plain, succ: 40, fail: 80, want: 55.0 / 121},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The plain formula reads the window alone: none of the
			// refinements' inputs changes it.
			c := tally{successes: tc.succ, failures: tc.fail, drops: 1000, recentFailures: tc.fail,
				downBuckets: 1000, recovering: true, reachSuccesses: 7, reachFailures: 1000, reachDrops: 1000}
			assert.InDelta(t, tc.want, tc.f.probability(tc.f.ratio(&c)), 1e-12)
		})
	}
}

func TestFormula_ratio_countedDrops(t *testing.T) {
	f := plain
	f.countDrops = true
	for _, tc := range []struct {
		name              string
		succ, fail, drops int64
		want              float64
	}{
		{name: "no drops", succ: 40, fail: 80, want: 55.0 / 121},
		{name: "drops under the cap", succ: 40, fail: 80, drops: 30, want: (150 - 5 - 60.0) / 151},
		{name: "drops capped at K−1 per admitted call", succ: 40, fail: 80, drops: 1000, want: (180 - 5 - 60.0) / 181},
		{name: "drops alone never shed a healthy window", succ: 100, drops: 1_000_000, want: 0},
		{name: "capped: numerator at most K·failures − protection", succ: 100, fail: 3, drops: 1_000_000, want: 0},
		{name: "no admitted call, no counted drop", drops: 50, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tally{successes: tc.succ, failures: tc.fail, drops: tc.drops}
			assert.InDelta(t, tc.want, f.probability(f.ratio(&c)), 1e-12)
		})
	}
}

func TestFormula_ratio_trustRecent(t *testing.T) {
	f := plain
	f.trustRecent = true
	for _, tc := range []struct {
		name                   string
		succ, fail             int64
		recentSucc, recentFail int64
		want                   float64
	}{
		{name: "down: older successes set aside", succ: 1000, fail: 10, recentFail: 10, want: 5.0 / 11},
		{name: "down needs more than protection", succ: 1000, fail: 5, recentFail: 5, want: 0},
		{name: "up: older failures set aside", succ: 6, fail: 100, recentSucc: 6, want: 0},
		{name: "up needs more than protection", succ: 5, fail: 100, recentSucc: 5, want: (105 - 5 - 7.5) / 106},
		{name: "mixed recent buckets keep the formula", succ: 40, fail: 80, recentSucc: 4, recentFail: 8, want: 55.0 / 121},
		{name: "quiet recent buckets keep the formula", succ: 40, fail: 80, want: 55.0 / 121},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tally{successes: tc.succ, failures: tc.fail, recentSuccesses: tc.recentSucc, recentFailures: tc.recentFail}
			assert.InDelta(t, tc.want, f.probability(f.ratio(&c)), 1e-12)
		})
	}
}

// light is the formula with the evidence of light traffic on: 40 calls,
// a window of 20 buckets; aggression 1 so that the ratio shows.
var light = formula{k: 1.5, protection: 5, aggression: 1, countDrops: true, trustRecent: true, evidence: 40, buckets: 20}

func TestFormula_ratio_evidence(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    formula
		c    tally
		want float64
	}{
		{name: "a window with enough calls is read alone", f: light,
			c:    tally{successes: 20, failures: 25, reachSuccesses: 200, reachFailures: 25},
			want: (45 - 5 - 30.0) / 46},
		{name: "light traffic: judged on the calls reached back for", f: light,
			c:    tally{successes: 2, failures: 3, reachSuccesses: 10, reachFailures: 30},
			want: (40 - 5 - 15.0) / 41},
		{name: "light traffic: the drops reached back for, when more", f: light,
			c:    tally{successes: 2, failures: 3, drops: 1, reachSuccesses: 10, reachFailures: 30, reachDrops: 10},
			want: (50 - 5 - 15.0) / 51},
		{name: "light traffic: the window's drops, when more", f: light,
			c:    tally{successes: 2, failures: 3, drops: 4, reachSuccesses: 10, reachFailures: 30, reachDrops: 1},
			want: (44 - 5 - 15.0) / 45},
		{name: "fewer calls reached back for than the window holds: the window", f: light,
			c:    tally{successes: 2, failures: 8, reachSuccesses: 1, reachFailures: 1},
			want: (10 - 5 - 3.0) / 11},
		{name: "down: up to evidence/2 failures reached back for", f: light,
			c:    tally{failures: 3, recentFailures: 8, downBuckets: 19, reachSuccesses: 5, reachFailures: 35},
			want: (20 - 5.0) / 21},
		{name: "down: the window's failures, when more", f: light,
			c:    tally{successes: 1, failures: 30, recentFailures: 8, downBuckets: 19},
			want: (30 - 5.0) / 31},
		{name: "down for a window: no protection", f: light,
			c:    tally{failures: 3, recentFailures: 8, downBuckets: 20, reachSuccesses: 5, reachFailures: 35},
			want: 20.0 / 21},
		{name: "down for a window, first failures: no protection", f: light,
			c:    tally{failures: 6, recentFailures: 6, downBuckets: 25, reachFailures: 6},
			want: 6.0 / 7},
		{name: "recovering: one succeeding bucket readmits", f: light,
			c:    tally{successes: 1, failures: 10, recentSuccesses: 1, recovering: true},
			want: 0},
		{name: "not recovering: up needs more than protection", f: light,
			c:    tally{successes: 1, failures: 10, recentSuccesses: 1},
			want: (11 - 5 - 1.5) / 12},
		{name: "recovering needs a succeeding run", f: light,
			c:    tally{successes: 1, failures: 10, recovering: true},
			want: (11 - 5 - 1.5) / 12},
		{name: "evidence off: the calls reached back for are ignored", f: plainRefined,
			c:    tally{successes: 2, failures: 8, reachSuccesses: 10, reachFailures: 30},
			want: (10 - 5 - 3.0) / 11},
		{name: "evidence off: protection stays, however long down", f: plainRefined,
			c:    tally{failures: 10, recentFailures: 10, downBuckets: 1000},
			want: (10 - 5.0) / 11},
		{name: "evidence off: no readmission on one success", f: plainRefined,
			c:    tally{successes: 1, failures: 10, recentSuccesses: 1, recovering: true},
			want: (11 - 5 - 1.5) / 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, tc.f.probability(tc.f.ratio(&tc.c)), 1e-12)
		})
	}
}

func TestFormula_ratio_shifted(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    formula
		c    tally
		want float64
	}{
		{name: "newest buckets failing clearly more: judged alone", f: light,
			// 4,800 of 5,000 succeed; of the newest 200, 100.
			c:    tally{successes: 4900, failures: 300, newestSuccesses: 100, newestFailures: 100},
			want: (200 - 5 - 150.0) / 201},
		{name: "their drops counted, up to K−1 per admitted call", f: light,
			c:    tally{successes: 4900, failures: 300, drops: 10, newestSuccesses: 100, newestFailures: 100, newestDrops: 1000},
			want: (300 - 5 - 150.0) / 301},
		{name: "the window's ratio when it drops more", f: light,
			c:    tally{successes: 100, failures: 150, drops: 125, newestSuccesses: 50, newestFailures: 60},
			want: (375 - 5 - 150.0) / 376},
		{name: "within three standard deviations of the window's share: the window", f: light,
			// 20 % of the window fails, 26 % of the newest 200: 2.1 sd.
			c:    tally{successes: 4000, failures: 1000, newestSuccesses: 148, newestFailures: 52},
			want: 0},
		{name: "fewer newest calls than evidence: the window", f: light,
			c:    tally{successes: 4900, failures: 300, newestSuccesses: 10, newestFailures: 29},
			want: 0},
		{name: "newest past the boundary, inside protection: nothing", f: light,
			c:    tally{successes: 4900, failures: 100, newestSuccesses: 26, newestFailures: 16},
			want: 0},
		{name: "evidence off: the window", f: plainRefined,
			c:    tally{successes: 4900, failures: 300, newestSuccesses: 100, newestFailures: 100},
			want: 0},
		{name: "plain: the window", f: plain,
			c:    tally{successes: 4900, failures: 300, newestSuccesses: 100, newestFailures: 100},
			want: 0},
		{name: "down keeps its own rule", f: light,
			c:    tally{successes: 4900, failures: 300, recentFailures: 300, newestFailures: 200},
			want: (300 - 5.0) / 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, tc.f.probability(tc.f.ratio(&tc.c)), 1e-12)
		})
	}
}

// plainRefined is light without the evidence of light traffic: the
// refinements as they were before it.
var plainRefined = formula{k: 1.5, protection: 5, aggression: 1, countDrops: true, trustRecent: true, buckets: 20}

func TestFormula_ratio_allRefinements(t *testing.T) {
	f := formula{k: 1.5, protection: 5, aggression: 1.5, countDrops: true, trustRecent: true}
	// Down, with drops: successes set aside, drops capped at 0.5·failures.
	c := tally{successes: 1000, failures: 20, drops: 500, recentFailures: 20}
	num, den := f.ratio(&c)
	assert.InDelta(t, (30-5.0)/31, num/den, 1e-12)
	assert.InDelta(t, math.Pow((30-5.0)/31, 1/1.5), f.probability(num, den), 1e-12)
}

func TestFormula_probability_aggression(t *testing.T) {
	for _, tc := range []struct {
		aggression, ratio, want float64
	}{
		{aggression: 1, ratio: 0.25, want: 0.25},
		{aggression: 1.5, ratio: 0.125, want: 0.25},
		{aggression: 2, ratio: 0.25, want: 0.5},
		{aggression: 3, ratio: 0.125, want: 0.5},
		{aggression: 10, ratio: 0, want: 0},
		{aggression: 1.5, ratio: 1, want: 1},
	} {
		f := formula{aggression: tc.aggression}
		assert.InDelta(t, tc.want, f.probability(tc.ratio, 1), 1e-12, "aggression %v ratio %v", tc.aggression, tc.ratio)
	}
}

// drops must agree with probability: a draw u drops exactly when u is
// below the probability.
func TestFormula_drops_agreesWithProbability(t *testing.T) {
	for _, aggression := range []float64{1, 1.5, 2, 2.5, 10} {
		f := formula{aggression: aggression}
		for _, ratio := range []float64{1e-9, 0.01, 0.125, 0.5, 0.9, 1} {
			num, den := ratio*7, 7.0 // any fraction num/den
			p := f.probability(num, den)
			for _, u := range []float64{0, p * (1 - 1e-9), p * (1 + 1e-9), 0.5, 1 - 1e-12} {
				if u >= 1 {
					continue
				}
				assert.Equal(t, u < p, f.drops(num, den, u), "aggression %v ratio %v u %v (p %v)", aggression, ratio, u, p)
			}
		}
	}
}

// tally reads the drops and the newest buckets only for a window with
// failures: without any, they cannot change the ratio.
func TestFormula_ratio_noFailuresNoDrop(t *testing.T) {
	for _, f := range []formula{plain, {k: 1, aggression: 1, countDrops: true, trustRecent: true},
		{k: 1.5, protection: 5, aggression: 1.5, countDrops: true, trustRecent: true}, light,
		{k: 1, aggression: 1.5, countDrops: true, trustRecent: true, evidence: 40, buckets: 20}} {
		for _, succ := range []int64{0, 1, 100, 1 << 40} {
			for _, drops := range []int64{0, 1, 1000, 1 << 50} {
				for _, recent := range []int64{0, 3, 1 << 20} {
					// Failures reached back for, however many, do not
					// shed a window without failures.
					c := tally{successes: succ, drops: drops, recentSuccesses: recent,
						reachFailures: recent, reachDrops: drops, downBuckets: recent}
					num, _ := f.ratio(&c)
					assert.Zero(t, num, "%+v %+v", f, c)
				}
			}
		}
	}
}
