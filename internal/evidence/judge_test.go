package evidence_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// defaults are the breaker's default settings.
var defaults = evidence.Settings{K: 1.5, Protection: 5, Aggression: 1.5, CountDrops: true, TrustRecent: true,
	Evidence: 40, Buckets: 20, Horizon: 30}

// ok and bad are buckets of successes and of failures.
func ok(n int64) evidence.Bucket  { return evidence.Bucket{Successes: n} }
func bad(n int64) evidence.Bucket { return evidence.Bucket{Failures: n} }

func repeat(b evidence.Bucket, n int) []evidence.Bucket {
	out := make([]evidence.Bucket, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestJudge_plainFormula(t *testing.T) {
	plain := evidence.Plain(1.5, 5, 20)
	for _, tc := range []struct {
		name     string
		finished []evidence.Bucket
		live     evidence.Bucket
		want     float64
	}{
		{name: "empty window", want: 0},
		{name: "healthy", finished: repeat(ok(10), 19), live: ok(5), want: 0},
		{name: "failures within protection", live: bad(5), want: 0},
		{name: "first failure past protection", live: bad(6), want: 1.0 / 7},
		{name: "all failing", finished: repeat(bad(5), 19), live: bad(5), want: 95.0 / 101},
		{name: "one third succeeding", finished: []evidence.Bucket{{Successes: 40, Failures: 80}}, want: 55.0 / 121},
		{name: "drops ignored", finished: []evidence.Bucket{{Successes: 40, Failures: 80, Drops: 1000}}, want: 55.0 / 121},
		{name: "buckets past the window are forgotten", finished: append(repeat(bad(100), 1), repeat(ok(0), 19)...), want: 0},
		{name: "the oldest bucket of the window still counts", finished: append(repeat(bad(100), 1), repeat(ok(0), 18)...),
			want: 95.0 / 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, evidence.Judge(plain, tc.finished, tc.live), 1e-12)
		})
	}
}

func TestJudge_refinements(t *testing.T) {
	pow := func(r float64) float64 { return math.Pow(r, 1/1.5) }
	for _, tc := range []struct {
		name     string
		s        evidence.Settings
		finished []evidence.Bucket
		live     evidence.Bucket
		want     float64
	}{
		{name: "counted drops, capped at K−1 per admitted call",
			s:        evidence.Settings{K: 1.5, Protection: 5, Aggression: 1, CountDrops: true, Buckets: 20},
			finished: []evidence.Bucket{{Successes: 40, Failures: 80, Drops: 1000}}, want: (180 - 5 - 60.0) / 181},
		{name: "drops alone never shed a healthy window", s: defaults,
			finished: []evidence.Bucket{{Successes: 100, Drops: 1_000_000}}, want: 0},
		{name: "aggression", s: evidence.Settings{K: 1.5, Protection: 5, Aggression: 1.5, Buckets: 20},
			live: bad(6), want: pow(1.0 / 7)},
		{name: "down: older successes set aside", s: defaults,
			finished: append(repeat(ok(100), 10), repeat(bad(3), 3)...), want: pow((9 - 5 + 15.0*0) / 10)},
		{name: "down on more than twice protection's failures: unprotected", s: defaults,
			finished: append(repeat(ok(100), 10), repeat(bad(10), 3)...), want: pow((30 - 0 + 15.0*0) / 31)},
		{name: "up: older failures set aside", s: defaults,
			finished: append(repeat(bad(10), 5), repeat(ok(3), 3)...), want: 0},
		{name: "a run needs more than protection of its outcome", s: defaults,
			finished: append(repeat(ok(100), 3), bad(5)), live: bad(0), want: 0},
		{name: "light traffic reads back past the window", s: defaults,
			finished: append(repeat(bad(1), 30), repeat(evidence.Bucket{}, 16)...), live: bad(3),
			// Down on the window's 6 failures or up to Evidence/2 of the
			// 33 read back, whichever are more; a down run over a window
			// drops protection.
			want: pow(20.0 / 21)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := evidence.Judge(tc.s, tc.finished, tc.live)
			assert.InDelta(t, tc.want, got, 1e-9)
		})
	}
}

func TestJudge_plainIgnoresRefinementInputs(t *testing.T) {
	// Runs, drops and older buckets change nothing for the card's formula.
	plain := evidence.Plain(1.5, 5, 20)
	h := append(repeat(ok(1000), 10), repeat(evidence.Bucket{Successes: 40, Failures: 80, Drops: 500}, 1)...)
	assert.Equal(t, 0.0, evidence.Judge(plain, h, evidence.Bucket{}), "10,040 successes outweigh 80 failures")
}

// outage is a window of buckets whose admitted calls all failed, the
// breaker dropping most calls, as at 2,000 requests/s after an outage's
// first buckets.
func outage() []evidence.Bucket {
	return repeat(evidence.Bucket{Failures: 4, Drops: 196}, 20)
}

// then returns the buckets of each part, one after the other.
func then(parts ...[]evidence.Bucket) []evidence.Bucket {
	var out []evidence.Bucket
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(b evidence.Bucket) []evidence.Bucket { return []evidence.Bucket{b} }

func TestJudge_recovery(t *testing.T) {
	pow := func(num, den float64) float64 {
		if num <= 0 {
			return 0
		}
		return math.Pow(num/den, 1/1.5)
	}
	// formula is the card's ratio with drops counted up to K−1 per
	// admitted call, under the defaults.
	formula := func(successes, failures, drops, protection float64) float64 {
		admitted := successes + failures
		return pow(admitted+min(drops, 0.5*admitted)-protection-1.5*successes, admitted+min(drops, 0.5*admitted)+1)
	}
	for _, tc := range []struct {
		name     string
		finished []evidence.Bucket
		live     evidence.Bucket
		want     float64
	}{
		{name: "healed, failing 1 %: readmitted on the calls since the outage",
			finished: then(outage(), one(evidence.Bucket{Successes: 4, Drops: 196}),
				one(evidence.Bucket{Successes: 198, Failures: 2})),
			live: evidence.Bucket{Successes: 99, Failures: 1}, want: 0},
		{name: "healed, failing 1 %: every bucket mixed",
			finished: then(outage(), one(evidence.Bucket{Successes: 3, Failures: 1, Drops: 196}),
				repeat(evidence.Bucket{Successes: 198, Failures: 2}, 5)),
			live: evidence.Bucket{Successes: 99, Failures: 1}, want: 0},
		{name: "after less than a window down, the window",
			finished: then(outage()[1:], one(evidence.Bucket{Successes: 200, Failures: 3})),
			live:     evidence.Bucket{Successes: 2, Failures: 1},
			// Not a recovery: the down run spans 19 buckets, less than a
			// window; the window holds 18 of them.
			want: formula(202, 18*4+4, 18*196, 5)},
		{name: "the drops of a recovery's first bucket were the outage's",
			// 20,000 requests/s: counted, the first bucket's 1,960 drops
			// would shed 20 failures among 2,000 calls.
			finished: then(repeat(evidence.Bucket{Failures: 40, Drops: 1960}, 20),
				one(evidence.Bucket{Successes: 40, Drops: 1960}), one(evidence.Bucket{Successes: 1980, Failures: 20})),
			want: 0},
		{name: "a recovery failing again is judged on its own calls",
			finished: then(outage(), one(evidence.Bucket{Successes: 4, Drops: 196}),
				one(evidence.Bucket{Successes: 10, Failures: 30, Drops: 160})),
			live: evidence.Bucket{Successes: 1, Failures: 9, Drops: 50},
			want: formula(15, 39, 406, 5)},
		{name: "a bucket the formula sheds on its own calls begins no recovery",
			finished: then(outage(), one(evidence.Bucket{Successes: 1, Failures: 10, Drops: 189})),
			// The window: 18 buckets of the outage and this one.
			want: formula(1, 18*4+10, 18*196+189, 5)},
		{name: "failures alone end a recovery: the window again",
			finished: then(outage(), one(evidence.Bucket{Successes: 4, Drops: 196}),
				one(evidence.Bucket{Successes: 150, Failures: 2}), one(bad(3))),
			live: evidence.Bucket{Successes: 1, Failures: 1},
			// 16 buckets of the outage are still in the window.
			want: formula(155, 16*4+2+3+1, 17*196, 5)},
		{name: "failures alone end a recovery: down again",
			finished: then(outage(), one(evidence.Bucket{Successes: 4, Drops: 196}),
				one(evidence.Bucket{Successes: 150, Failures: 2}), one(bad(60))),
			live: bad(30),
			// Down on the window's failures, protection gone: the new
			// down run spans one finished bucket, but holds more than
			// twice protection's failures.
			want: formula(0, 16*4+2+90, 17*196, 0)},
		{name: "an overload that begins in a recovery is judged on its newest buckets",
			finished: then(outage(), one(evidence.Bucket{Successes: 4, Drops: 196}),
				repeat(evidence.Bucket{Successes: 198, Failures: 2}, 3), one(evidence.Bucket{Successes: 100, Failures: 100})),
			live: evidence.Bucket{Successes: 50, Failures: 50},
			want: formula(150, 150, 0, 5)},
		{name: "a recovery that spans the window is the window",
			finished: then(outage(), one(evidence.Bucket{Successes: 4, Drops: 196}),
				repeat(evidence.Bucket{Successes: 150, Failures: 50}, 18)),
			live: evidence.Bucket{Successes: 75, Failures: 25},
			want: formula(4+18*150+75, 18*50+25, 196, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, evidence.Judge(defaults, tc.finished, tc.live), 1e-9)
		})
	}
}

func TestJudge_outageOnsetAfterHealthIsNotMasked(t *testing.T) {
	// A dependency failing 1 % of 200 calls a bucket goes down: the first
	// bucket of failures is judged with the newest finished one, the next
	// sheds at once.
	healthy := repeat(evidence.Bucket{Successes: 198, Failures: 2}, 19)
	assert.InDelta(t, math.Pow(98.0/401, 1/1.5), evidence.Judge(defaults, healthy, bad(200)), 1e-9,
		"the newest buckets judged alone")
	assert.Greater(t, evidence.Judge(defaults, then(healthy, one(bad(200))), bad(10)), 0.8, "down")
}

func TestJudge_downNeedsAnUnlikelyRun(t *testing.T) {
	pow := func(r float64) float64 { return math.Pow(r, 1/1.5) }
	oneIn4 := repeat(evidence.Bucket{Successes: 3, Failures: 1}, 16)
	for _, tc := range []struct {
		name     string
		finished []evidence.Bucket
		want     float64
	}{
		// 0.25⁶ is 2.4·10⁻⁴: a dependency failing a quarter of its calls
		// gives 6 failures in a row once in a few thousand calls.
		{name: "6 failures in a row from a dependency failing 1 call in 4: the window",
			finished: then(oneIn4, repeat(bad(2), 3)), want: 0},
		{name: "10 in a row: down", finished: then(oneIn4, one(bad(4)), repeat(bad(3), 2)),
			want: pow((26 - 5) / 27.0)},
		{name: "6 in a row from a dependency failing 1 call in 64: down",
			finished: then(repeat(ok(4), 15), one(evidence.Bucket{Successes: 3, Failures: 1}), repeat(bad(2), 3)),
			want:     pow((7 - 5) / 8.0)},
		{name: "6 in a row and nothing else read: down", finished: repeat(bad(2), 3), want: pow(1.0 / 7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, evidence.Judge(defaults, tc.finished, evidence.Bucket{}), 1e-9)
		})
	}
}

// TestJudge_overloadedCountsEveryDrop: while Overloaded, the window and
// the newest buckets judged on their own count every drop, as the book
// does; a recovery, whose first bucket's drops were the outage's, counts
// them up to K−1 per admitted call still.
func TestJudge_overloadedCountsEveryDrop(t *testing.T) {
	overloaded := defaults
	overloaded.Overloaded, overloaded.Aggression = true, 1
	for _, tc := range []struct {
		name     string
		finished []evidence.Bucket
		live     evidence.Bucket
		want     float64
	}{
		{name: "the window",
			finished: repeat(evidence.Bucket{Successes: 100, Failures: 100, Drops: 200}, 19),
			want:     (19*400 - 5 - 1.5*19*100) / (19*400 + 1.0)},
		{name: "the newest buckets, failing more",
			finished: then(repeat(evidence.Bucket{Successes: 100, Failures: 10}, 18),
				one(evidence.Bucket{Successes: 50, Failures: 150, Drops: 600})),
			// The window's formula is 0 (2,780 − 5 − 1.5·1,850).
			want: (800 - 5 - 1.5*50) / 801.0},
		{name: "a recovery",
			finished: then(outage(), one(evidence.Bucket{Successes: 4, Drops: 196}),
				one(evidence.Bucket{Successes: 10, Failures: 30, Drops: 160})),
			live: evidence.Bucket{Successes: 1, Failures: 9, Drops: 50},
			want: (54 + 27 - 5 - 1.5*15) / (54 + 27 + 1.0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, evidence.Judge(overloaded, tc.finished, tc.live), 1e-9)
		})
	}
}
