package httpbreaker

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMemories_of_boundedByMaxMemories(t *testing.T) {
	var ms memories
	first := ms.of("k0")
	assert.Same(t, first, ms.of("k0"), "the first key keeps its memory")
	for i := 1; i <= maxMemories; i++ {
		ms.of("k" + strconv.Itoa(i))
	}
	assert.Same(t, ms.of("k1"), ms.of("k1"), "a later key keeps its memory")
	assert.NotSame(t, ms.of("k1"), ms.of("k2"))
	assert.Same(t, &ms.shared, ms.of("one too many"), "past maxMemories keys share one")
}

func TestOverload_advice(t *testing.T) {
	var o overload
	assert.Equal(t, "", o.served(1), "not shedding")
	for range overloadMinSheds - 1 {
		assert.Equal(t, retryLater, o.shedding(2), "too few sheds to judge")
	}
	assert.Equal(t, retryNo, o.shedding(2), "most sheds are retries")
	assert.Equal(t, retryNo, o.shedding(1), "and so until the breaker stops shedding")
	for range sheddingSpan {
		assert.Equal(t, retryNo, o.served(1), "served while shedding")
	}
	assert.Equal(t, "", o.served(1), "sheddingSpan served in a row: not shedding")
	assert.False(t, o.refusing.Load())
}

func TestOverload_probe(t *testing.T) {
	var o overload
	for i := 1; i <= 2*probeEvery; i++ {
		assert.False(t, o.probe(), "a dependency not seen down is not probed")
	}
	for range downFailures {
		o.outcome(Failure, false)
	}
	n := 0
	for range 2 * probeEvery {
		if o.probe() {
			n++
		}
	}
	assert.Equal(t, 2, n, "one in probeEvery")
	o.outcome(Success, true)
	assert.True(t, o.probe(), "after a probe succeeded, every one")
	o.outcome(Failure, false)
	assert.False(t, o.healed.Load(), "until a request fails")
}
