package evidence

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// downAt is the judgement of a 2 s window of finished buckets that held
// window, after a down run of downBuckets buckets.
func downAt(window Bucket, downBuckets int64) *Summary {
	return &Summary{Window: window, run: run{down: 30, downBuckets: downBuckets}}
}

// twentyASecond is the finished buckets of a 2 s window at 20 calls a
// second, shed: 19 buckets of 2 calls.
var twentyASecond = Bucket{Failures: 2, Drops: 36}

func TestSettings_PaceBuckets(t *testing.T) {
	assert.Equal(t, int64(10), judged.PaceBuckets(), "1 s at the default window")
	plain, off := Plain(1.5, 5, 20), judged.Without(RulePace)
	assert.Equal(t, int64(0), plain.PaceBuckets(), "the plain formula paces nothing")
	assert.Equal(t, int64(0), off.PaceBuckets(), "off")
	one := judged
	one.Buckets = 1
	assert.Equal(t, int64(1), one.PaceBuckets(), "a bucket at least")
}

func TestSettings_ProbeDue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     Settings
		since int64
		sum   *Summary
		want  bool
	}{
		{name: "the tenth bucket without a call", s: judged, since: 9, sum: downAt(twentyASecond, 20), want: true},
		{name: "later", s: judged, since: 30, sum: downAt(twentyASecond, 300), want: true},
		{name: "the ninth", s: judged, since: 8, sum: downAt(twentyASecond, 20)},
		{name: "down for less than a window", s: judged, since: 9, sum: downAt(twentyASecond, 19)},
		{name: "not down: a success among the newest outcomes", s: judged, since: 9,
			sum: &Summary{Window: twentyASecond, run: run{up: 1}}},
		{name: "2 calls a second: the draws decide", s: judged, since: 9, sum: downAt(Bucket{Failures: 1, Drops: 3}, 20)},
		{name: "16 calls a span", s: judged, since: 9, sum: downAt(Bucket{Failures: 1, Drops: 30}, 20), want: true},
		{name: "fewer", s: judged, since: 9, sum: downAt(Bucket{Failures: 1, Drops: 29}, 20)},
		{name: "plain", s: Plain(1.5, 5, 20), since: 30, sum: downAt(twentyASecond, 300)},
		{name: "off", s: judged.Without(RulePace), since: 30, sum: downAt(twentyASecond, 300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.s.ProbeDue(tc.since, tc.sum))
		})
	}
}

func TestSettings_Paced(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    float64
		sum  *Summary
		want bool
	}{
		{name: "20 calls a second at 0.98: the draws would let 0.4 a span through", p: 0.98,
			sum: downAt(twentyASecond, 20), want: true},
		{name: "at 0.9: 2 a span, the draws decide", p: 0.9, sum: downAt(twentyASecond, 20)},
		{name: "200 calls a second at 0.98: 4 a span", p: 0.98, sum: downAt(Bucket{Failures: 8, Drops: 372}, 20)},
		{name: "2 calls a second", p: 0.99, sum: downAt(Bucket{Failures: 1, Drops: 3}, 20)},
		{name: "down for less than a window", p: 0.98, sum: downAt(twentyASecond, 19)},
		{name: "not shedding", p: 0, sum: downAt(twentyASecond, 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, judged.Paced(tc.p, tc.sum))
		})
	}
	plain := Plain(1.5, 5, 20)
	assert.False(t, plain.Paced(0.98, downAt(twentyASecond, 20)), "the plain formula")
}
