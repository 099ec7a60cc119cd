package serverside

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// step is one call a test shows an Overload: shed or served, with its
// attempt number, and the advice it must get.
type step struct {
	shed    bool
	attempt int
	n       int // how many such calls in a row; 1 when 0
	want    string
}

func TestOverload_advice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "not shedding", steps: []step{{attempt: 1, want: ""}, {attempt: 2, n: 100, want: ""}}},
		{name: "first attempts shed", steps: []step{
			{shed: true, attempt: 1, n: 20, want: RetryLater},
			{attempt: 1, want: RetryLater}, // served while shedding: its failure carries the advice
		}},
		{name: "too few sheds to judge", steps: []step{{shed: true, attempt: 2, n: overloadMinSheds - 1, want: RetryLater}}},
		{name: "most sheds retries", steps: []step{
			{shed: true, attempt: 2, n: overloadMinSheds - 1, want: RetryLater},
			{shed: true, attempt: 2, want: RetryNo},
			{shed: true, attempt: 1, n: 20, want: RetryNo}, // until the breaker stops shedding
			{attempt: 1, n: sheddingSpan, want: RetryNo},
			{attempt: 1, want: ""}, // sheddingSpan served in a row: not shedding
			{shed: true, attempt: 1, want: RetryLater},
		}},
		{name: "retries not most", steps: []step{
			{shed: true, attempt: 1, n: 5, want: RetryLater},
			{shed: true, attempt: 3, n: 5, want: RetryLater},
		}},
		{name: "the histogram follows the newest calls", steps: []step{
			{shed: true, attempt: 2, n: overloadMinSheds - 2, want: RetryLater},
			{attempt: 1, n: sheddingSpan, want: RetryLater},
			{attempt: 1, n: 4 * overloadMemory, want: ""},
			// The old retries halved away: 3 sheds, too few. Without
			// halving, 9 retries of 9 sheds would say "no".
			{shed: true, attempt: 2, n: 3, want: RetryLater},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Overload
			for i, s := range tc.steps {
				for range max(s.n, 1) {
					got := o.Served(s.attempt)
					if s.shed {
						got = o.Shedding(s.attempt)
					}
					if !assert.Equal(t, s.want, got, "step %d", i) {
						return
					}
				}
			}
		})
	}
}

func TestKind(t *testing.T) {
	assert.Equal(t, 0, kind(0))
	assert.Equal(t, 0, kind(1))
	assert.Equal(t, 1, kind(2))
	assert.Equal(t, 1, kind(MaxAttempt))
}
