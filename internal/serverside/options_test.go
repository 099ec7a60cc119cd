package serverside

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
)

func TestBreakers(t *testing.T) {
	r := breaker.MustNewRegistry()
	get, invalid := Breakers(r, nil, true)
	assert.Empty(t, invalid)
	assert.Same(t, r.Get("k"), get("k"), "the registry's breakers")

	mine := breaker.MustNew()
	get, invalid = Breakers(r, func(string) breaker.Breaker { return mine }, true)
	assert.Empty(t, invalid)
	assert.Same(t, mine, get("k"), "a test's")

	_, invalid = Breakers(nil, nil, false)
	assert.Equal(t, "WithRegistry(nil): registry must not be nil", invalid, "the registry first")
	_, invalid = Breakers(r, nil, false)
	assert.Equal(t, "WithKey(nil): key function must not be nil", invalid)
}
