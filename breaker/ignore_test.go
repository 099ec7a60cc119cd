package breaker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

func TestPromise_Ignore_recordsNothing(t *testing.T) {
	b, _ := newBreaker(t)
	succeed(t, b, 3)
	fail(t, b, 2, "boom")

	p, err := b.Allow()
	require.NoError(t, err)
	_, ok := p.(srebreaker.Ignorer)
	require.True(t, ok, "the breaker's promise implements Ignorer")
	srebreaker.Ignore(p)

	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(3), accepts)
	assert.Equal(t, int64(5), total, "an ignored call is not counted")
}

func TestNop_promiseIgnores(t *testing.T) {
	p, err := breaker.Nop().Allow()
	require.NoError(t, err)
	_, ok := p.(srebreaker.Ignorer)
	assert.True(t, ok)
	assert.NotPanics(t, func() { srebreaker.Ignore(p) })
}
