package serverside

import (
	"testing"

	"github.com/srebreaker/srebreaker/internal/evidence"

	"github.com/stretchr/testify/assert"
)

func TestOverload_Probe(t *testing.T) {
	var o Overload
	for range 2 * evidence.ProbeEvery {
		assert.False(t, o.Probe(), "a dependency not seen down is not probed")
	}
	o.Served(1) // the breaker admits one: the drops in a row start again
	for range evidence.DownFailures {
		o.Finished(Failure, false)
	}
	var got []int
	for i := 1; i <= 2*evidence.ProbeEvery; i++ {
		if o.Probe() {
			got = append(got, i)
		}
	}
	assert.Equal(t, []int{evidence.ProbeEvery, 2 * evidence.ProbeEvery}, got, "one in evidence.ProbeEvery")
	o.Finished(Success, false)
	assert.False(t, o.probes.healed.Load(), "a success of a call the breaker admitted is the breaker's to see")
	for range evidence.DownFailures {
		o.Finished(Failure, true)
	}
	o.Finished(Ignore, true)
	o.Finished(Success, true)
	assert.True(t, o.Probe(), "after a probe succeeded, every drop")
	assert.True(t, o.Probe())
	o.Finished(Failure, false)
	assert.False(t, o.Probe(), "until a call fails")
}
