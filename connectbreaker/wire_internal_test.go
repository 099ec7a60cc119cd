package connectbreaker

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/internal/serverside"
)

// The advice is written out in go doc; it is the server side's one policy's.
func TestRetryAdvice_isTheServerSides(t *testing.T) {
	assert.Equal(t, serverside.RetryNo, RetryNo)
	assert.Equal(t, serverside.RetryLater, RetryLater)
}
