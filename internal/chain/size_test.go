package chain

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The Context a server side allocates for every call it serves (gRPC's,
// Connect's) stays within 112 bytes, one of Go's size classes: the level
// it carries lives in the Mark's spare byte, not in a field of its own.
func TestContext_size(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Context{}), uintptr(112))
}
