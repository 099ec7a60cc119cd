package breaker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistry_Get_newNamesReachTheLockFreeMap(t *testing.T) {
	var r Registry
	const names = 1000
	for i := range names {
		r.Get(fmt.Sprint("dep-", i))
	}
	for range 2 { // lookups that lock pay for the copy, then stop locking
		for i := range names {
			r.Get(fmt.Sprint("dep-", i))
		}
	}
	read := r.read.Load()
	require.NotNil(t, read)
	assert.Len(t, *read, names, "every name is in the map read without a lock")
	assert.Empty(t, r.added)
	for i := range names {
		name := fmt.Sprint("dep-", i)
		assert.Same(t, (*read)[name].b, r.Get(name))
	}
}

func TestRegistry_Get_copiesStayLinear(t *testing.T) {
	var r Registry
	copies := 0
	for i := range 4096 {
		before := r.read.Load()
		r.Get(fmt.Sprint("dep-", i))
		if r.read.Load() != before {
			copies += r.readLen()
		}
	}
	assert.Less(t, copies, 3*4096, "entries copied while adding 4096 names, each looked up once")
}
