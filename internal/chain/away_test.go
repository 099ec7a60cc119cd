package chain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAway: calls go out and come back while the request holds its room;
// the first out and the last back are told; once the room is given back
// (Finish, which tells how many were out), none counts.
func TestAway(t *testing.T) {
	var a Away
	first, ok := a.Out()
	assert.True(t, first)
	assert.True(t, ok)
	first, ok = a.Out()
	assert.False(t, first, "a second call out")
	assert.True(t, ok)
	assert.False(t, a.In(), "one is still out")
	assert.True(t, a.In(), "the last back")
	assert.False(t, a.In(), "none out: nothing to count")

	_, _ = a.Out()
	assert.Equal(t, int32(1), a.Finish(), "given back with a call out")
	_, ok = a.Out()
	assert.False(t, ok, "no call counts once the room is given back")
	assert.False(t, a.In())
	assert.Equal(t, int32(1), a.Finish())

	var b Away
	assert.Zero(t, b.Finish(), "given back with none out")
}
