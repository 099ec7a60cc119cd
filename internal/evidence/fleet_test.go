package evidence

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func defaults() Settings {
	return Settings{K: 1.5, Protection: 5, Aggression: 1.5, CountDrops: true, TrustRecent: true,
		Evidence: 40, Buckets: 20, Horizon: 30}
}

// history returns a history of s that finished buckets, oldest first.
func history(s Settings, buckets ...Bucket) *History {
	h := NewHistory(s)
	for _, b := range buckets {
		h.Finish(b, 0)
	}
	return h
}

func TestHistory_Share_roundTrip(t *testing.T) {
	s := defaults()
	h := history(s, Bucket{Successes: 1}, Bucket{}, Bucket{Failures: 2, Drops: 1})
	shared := h.Share(100, 1000)
	assert.Equal(t, Shared{Span: 100, Size: 20, Newest: 1002,
		Buckets: []Bucket{{Successes: 1}, {}, {Failures: 2, Drops: 1}}}, shared)

	// Merged with nothing, a history judges as it does alone.
	empty := Shared{Span: 100, Size: 20}
	assert.Equal(t, h.Summarize(), h.Merged(&empty, 1000))
}

// Merging histories is judging the buckets they add up to: the same
// summary as a history that finished the sums.
func TestHistory_Merged_isTheHistoryOfTheSums(t *testing.T) {
	s := defaults()
	own := []Bucket{{Successes: 2}, {Failures: 1}, {}, {Successes: 1, Drops: 3}, {Failures: 1}}
	others := []Bucket{{Failures: 3}, {Failures: 1}, {Drops: 2}, {Failures: 4}, {}}
	for _, offset := range []int64{0, 7, -3, 1 << 40} {
		h := history(s, own...)
		shared := history(s, others...).Share(1, offset)
		sums := make([]Bucket, len(own))
		for i := range own {
			sums[i] = own[i].Plus(others[i])
		}
		assert.Equal(t, history(s, sums...).Summarize(), h.Merged(&shared, offset), "offset %d", offset)
	}
}

// Others' buckets past the newest finished bucket wait for it; their
// older buckets go to the blocks, which reading back on light traffic
// reads.
func TestHistory_Merged_alignment(t *testing.T) {
	s := defaults()
	h := history(s, make([]Bucket, 50)...)
	others := Shared{Span: 1, Size: 20, Newest: 50, Buckets: []Bucket{{Failures: 7}}}
	assert.Equal(t, Bucket{}, h.Merged(&others, 0).Window, "bucket 50 has not finished")
	others.Newest = 49
	assert.Equal(t, Bucket{Failures: 7}, h.Merged(&others, 0).Window)
	others.Newest = 20 // left the window: in block 1
	sum := h.Merged(&others, 0)
	assert.Equal(t, Bucket{}, sum.Window)
	assert.Equal(t, Bucket{Failures: 7}, sum.Reach, "read back for on light traffic")
	num, _ := s.Ratio(&sum, Bucket{Failures: 1})
	assert.Greater(t, num, 0.0)
}

// A block of failures spans its buckets in the runs: a fleet down for a
// window loses protection.
func TestHistory_Merged_downRunThroughBlocks(t *testing.T) {
	s := defaults()
	s.Protection = 15 // the runs' 20 and 25 failures are no more than twice it
	h := history(s, make([]Bucket, 60)...)
	fails := make([]Bucket, 19)
	for i := range fails {
		fails[i] = Bucket{Failures: 1}
	}
	others := Shared{Span: 1, Size: 20, Newest: 59, Buckets: fails}
	short := h.Merged(&others, 0)
	others.NewestBlock, others.Blocks = 2, []Bucket{{Failures: 5}}
	long := h.Merged(&others, 0)
	live := Bucket{Failures: 1}
	p1, p2 := s.Probability(s.Ratio(&short, live)), s.Probability(s.Ratio(&long, live))
	assert.Greater(t, p2, p1, "down for more than a window: protection no longer applies")
}

// repeated returns n copies of b.
func repeated(b Bucket, n int) []Bucket {
	out := make([]Bucket, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// The fleet's judgement on histories merged from a process's and the
// others': where it leaves a process to its own window or its own
// successes, and how a fleet down for a window probes. While the fleet
// was judged as Ratio judges, a fleet under overload made 1.23 attempts
// per success where its processes alone made 1.08, and a fleet of n
// processes probed a dependency still down with n calls at once.
func TestSettings_FleetRatio(t *testing.T) {
	overloaded := repeated(Bucket{Successes: 2, Failures: 1, Drops: 1}, 20) // 57 calls admitted in the window
	othersOverloaded := repeated(Bucket{Successes: 20, Failures: 10, Drops: 10}, 20)
	few := append(make([]Bucket, 19), Bucket{Successes: 1})
	down := append(repeated(Bucket{Failures: 1}, 25), repeated(Bucket{Drops: 1}, 19)...)
	othersDown := append(repeated(Bucket{Failures: 3}, 25), repeated(Bucket{Drops: 4}, 19)...)
	ownSucceeding := repeated(Bucket{Successes: 3}, 20) // 57 calls admitted in the window, all successes
	fewSucceeding := append(make([]Bucket, 17), repeated(Bucket{Successes: 3}, 3)...)
	// Others of which a part is cut off from the newest bucket on: the
	// fleet's newest bucket, the process's included, holds 20 successes
	// and 40 failures, against 1,080 successes in the rest of the window.
	othersCut := append(repeated(Bucket{Successes: 57}, 19), Bucket{Successes: 17, Failures: 40})
	for _, tc := range []struct {
		name               string
		s                  Settings
		own, others        []Bucket
		ownLive, fleetLive Bucket // the fleet's live bucket holds the process's
		// want is FleetRatio's num/den, or with asRatio Ratio's over
		// the merged history; ratio is Ratio's, to show what differs.
		want, ratio float64
		asRatio     bool
	}{
		{name: "mixed: the process judges its own window", s: defaults(), own: overloaded, others: othersOverloaded,
			ownLive: Bucket{Successes: 1}, fleetLive: Bucket{Successes: 11, Failures: 5},
			// total 643 admitted + 209 drops, num 852 − 5 − 1.5·429
			want: 0, ratio: 203.5 / 853},
		// Issue 28: a part of the fleet cut off made the rest shed.
		{name: "mixed, its own calls succeed: nothing of the fleet's", s: defaults(), own: ownSucceeding,
			others: othersCut, ownLive: Bucket{Successes: 1}, fleetLive: Bucket{Successes: 10, Failures: 20},
			// the newest buckets shift: 30 successes of 90, num 90 − 5 − 1.5·30
			want: 0, ratio: 40.0 / 91},
		{name: "mixed, its own live bucket failed: the fleet's newest buckets", s: defaults(), own: ownSucceeding,
			others: othersCut, ownLive: Bucket{Failures: 1}, fleetLive: Bucket{Successes: 9, Failures: 21},
			want: 41.5 / 91, ratio: 41.5 / 91}, // 90 − 5 − 1.5·29
		{name: "mixed, its own calls succeed but are too few: the fleet's", s: defaults(), own: fewSucceeding,
			others: othersCut, ownLive: Bucket{Successes: 1}, fleetLive: Bucket{Successes: 10, Failures: 20},
			asRatio: true},
		{name: "mixed, too few calls of its own: the fleet's window", s: defaults(), own: few,
			others: othersOverloaded, fleetLive: Bucket{Successes: 10, Failures: 5}, asRatio: true},
		{name: "down for a window, drops alone: the others' share", s: defaults(), own: down, others: othersDown,
			ownLive: Bucket{Drops: 1}, fleetLive: Bucket{Drops: 5},
			want: 80.0 / 101, ratio: 0}, // (100 − 20) / (100 + 1)
		{name: "down for a window, alone in its fleet: probes as a breaker", s: defaults(), own: down,
			others: make([]Bucket, len(down)), ownLive: Bucket{Drops: 1}, fleetLive: Bucket{Drops: 1}, want: 0},
		{name: "plain formula, mixed", s: Plain(1.5, 5, 20), own: overloaded, others: othersOverloaded,
			ownLive: Bucket{Successes: 1}, fleetLive: Bucket{Successes: 11, Failures: 5}, asRatio: true},
		{name: "plain formula, drops alone", s: Plain(1.5, 5, 20), own: down, others: othersDown,
			ownLive: Bucket{Drops: 1}, fleetLive: Bucket{Drops: 5}, asRatio: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own := history(tc.s, tc.own...)
			shared := history(tc.s, tc.others...).Share(1, 0)
			merged := own.Merged(&shared, 0)
			ownSum := own.Summarize()
			num, den := tc.s.FleetRatio(&merged, tc.fleetLive, &ownSum, tc.ownLive)
			rnum, rden := tc.s.Ratio(&merged, tc.fleetLive)
			if tc.asRatio {
				assert.Equal(t, rnum/rden, num/den)
				return
			}
			assert.InDelta(t, tc.want, num/den, 1e-12)
			assert.InDelta(t, tc.ratio, rnum/rden, 1e-12, "Ratio over the merged history")
		})
	}
}
