package serverside

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
		{name: "healthy: never", dropped: probeEvery, failedRun: 0, want: false},
		{name: "a failure or two: left to the breaker", dropped: probeEvery, failedRun: downFailures - 1, want: false},
		{name: "down, the probeEvery-th drop", dropped: probeEvery, failedRun: downFailures, want: true},
		{name: "down, a later multiple", dropped: 3 * probeEvery, failedRun: 50, want: true},
		{name: "down, between probes", dropped: probeEvery + 1, failedRun: downFailures, want: false},
		{name: "down, the first drop", dropped: 1, failedRun: downFailures, want: false},
		{name: "healed: every drop", dropped: 1, failedRun: 0, healed: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, probeDue(tc.dropped, tc.failedRun, tc.healed))
		})
	}
}

func TestOverload_Probe(t *testing.T) {
	var o Overload
	for range 2 * probeEvery {
		assert.False(t, o.Probe(), "a dependency not seen down is not probed")
	}
	o.Served(1) // the breaker admits one: the drops in a row start again
	for range downFailures {
		o.Finished(Failure, false)
	}
	var got []int
	for i := 1; i <= 2*probeEvery; i++ {
		if o.Probe() {
			got = append(got, i)
		}
	}
	assert.Equal(t, []int{probeEvery, 2 * probeEvery}, got, "one in probeEvery")
	o.Finished(Success, false)
	assert.False(t, o.probes.healed.Load(), "a success of a call the breaker admitted is the breaker's to see")
	for range downFailures {
		o.Finished(Failure, true)
	}
	o.Finished(Ignore, true)
	o.Finished(Success, true)
	assert.True(t, o.Probe(), "after a probe succeeded, every drop")
	assert.True(t, o.Probe())
	o.Finished(Failure, false)
	assert.False(t, o.Probe(), "until a call fails")
}
