package serverside

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMemories_Of_boundedByMaxMemories(t *testing.T) {
	var ms Memories
	first := ms.Of("k0")
	assert.Same(t, first, ms.Of("k0"), "the first key keeps its memory")
	for i := 1; i <= maxMemories; i++ {
		ms.Of("k" + strconv.Itoa(i))
	}
	assert.Same(t, ms.Of("k1"), ms.Of("k1"), "a later key keeps its memory")
	assert.NotSame(t, ms.Of("k1"), ms.Of("k2"))
	assert.Same(t, &ms.shared, ms.Of("one too many"), "past maxMemories keys share one")
}
