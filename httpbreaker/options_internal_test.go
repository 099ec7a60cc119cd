package httpbreaker

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/internal/serverside"
)

// The constants that go doc shows with their values are the values the
// package sends and reads.
func TestConstants_matchTheWire(t *testing.T) {
	assert.Equal(t, serverside.RetryNo, RetryNo)
	assert.Equal(t, 100, serverside.MaxAttempt, "AttemptOf's doc says 100")
}
