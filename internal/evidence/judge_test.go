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
			finished: append(repeat(ok(100), 10), repeat(bad(10), 3)...), want: pow((30 - 5 + 15.0*0) / 31)},
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
