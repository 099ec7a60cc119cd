package evidence

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProbeDue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dropped   int64
		failedRun int64
		healed    bool
		want      bool
	}{
		{name: "healthy: never", dropped: ProbeEvery, failedRun: 0, want: false},
		{name: "a failure or two: left to the breaker", dropped: ProbeEvery, failedRun: DownFailures - 1, want: false},
		{name: "down, the ProbeEvery-th drop", dropped: ProbeEvery, failedRun: DownFailures, want: true},
		{name: "down, a later multiple", dropped: 3 * ProbeEvery, failedRun: 50, want: true},
		{name: "down, between probes", dropped: ProbeEvery + 1, failedRun: DownFailures, want: false},
		{name: "down, the first drop", dropped: 1, failedRun: DownFailures, want: false},
		{name: "healed: every drop", dropped: 1, failedRun: 0, healed: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ProbeDue(tc.dropped, tc.failedRun, tc.healed))
		})
	}
}

func TestHealedBy(t *testing.T) {
	assert.True(t, HealedBy(true, DownFailures), "a probe succeeded while down")
	assert.False(t, HealedBy(false, DownFailures), "an admitted call's success is the breaker's to see")
	assert.False(t, HealedBy(true, DownFailures-1), "not down")
}
