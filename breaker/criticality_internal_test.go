package breaker

import (
	"testing"

	"github.com/srebreaker/srebreaker/criticality"
	"github.com/stretchr/testify/assert"
)

func TestLevelProbabilities(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     float64
		calls [criticality.Levels]int64 // SHEDDABLE, SHEDDABLE_PLUS, CRITICAL, CRITICAL_PLUS
		want  [criticality.Levels]float64
	}{
		{name: "healthy", p: 0, calls: [4]int64{20, 20, 40, 20}, want: [4]float64{0, 0, 0, 0}},
		{name: "lowest level takes it all", p: 0.1, calls: [4]int64{20, 20, 40, 20}, want: [4]float64{0.5, 0, 0, 0}},
		{name: "exactly the lowest", p: 0.2, calls: [4]int64{20, 20, 40, 20}, want: [4]float64{1, 0, 0, 0}},
		{name: "into the next", p: 0.3, calls: [4]int64{20, 20, 40, 20}, want: [4]float64{1, 0.5, 0, 0}},
		{name: "into critical", p: 0.6, calls: [4]int64{20, 20, 40, 20}, want: [4]float64{1, 1, 0.5, 0}},
		{name: "outage", p: 0.97, calls: [4]int64{20, 20, 40, 20}, want: [4]float64{1, 1, 1, 0.85}},
		{name: "everything", p: 1, calls: [4]int64{20, 20, 40, 20}, want: [4]float64{1, 1, 1, 1}},
		{name: "one level alone gets p", p: 0.3, calls: [4]int64{0, 0, 100, 0}, want: [4]float64{1, 1, 0.3, 0}},
		{name: "empty level above the drops", p: 0.1, calls: [4]int64{50, 0, 50, 0}, want: [4]float64{0.2, 0, 0, 0}},
		{name: "no calls", p: 0.5, calls: [4]int64{0, 0, 0, 0}, want: [4]float64{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := levelProbabilities(tc.p, tc.calls)
			for i := range got {
				assert.InDelta(t, tc.want[i], got[i], 1e-9, "level %v", criticality.Sheddable+criticality.Level(i))
			}
			// The expected drops are the share p of the calls.
			var drops, total float64
			for i, n := range tc.calls {
				drops += got[i] * float64(n)
				total += float64(n)
			}
			assert.InDelta(t, tc.p*total, drops, 1e-9)
		})
	}
}
