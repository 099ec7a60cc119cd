package httpbreaker

import (
	"net/http"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/internal/serverside"
)

// The writer is allocated for every request the Handler serves, with the
// request's copy in it: at 512 bytes or less, Go allocates it without a
// header of its type, a third faster than the next size up (704 bytes).
// The request's own size is Go's; the rest is the writer's.
func TestResponseWriter_size(t *testing.T) {
	const sizeOfRequest = 304 // http.Request's size on 64-bit Go 1.26
	own := unsafe.Sizeof(responseWriter{}) - unsafe.Sizeof(http.Request{})
	assert.LessOrEqual(t, own, uintptr(512-sizeOfRequest), "the writer's own fields")
}

func TestAdvice_roundTrips(t *testing.T) {
	for _, v := range []string{"", serverside.RetryLater, serverside.RetryNo} {
		assert.Equal(t, v, adviceOf(v).String())
	}
}
