package srebreaker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker"
)

// overloadPromise also implements OverloadRejecter.
type overloadPromise struct {
	plainPromise
	reasons []string
}

func (p *overloadPromise) RejectOverloaded(reason string) { p.reasons = append(p.reasons, reason) }

func TestRejectOverloaded_callsOverloadRejecter(t *testing.T) {
	p := &overloadPromise{}
	srebreaker.RejectOverloaded(p, "503 overloaded")
	assert.Equal(t, []string{"503 overloaded"}, p.reasons)
	assert.Equal(t, plainPromise{}, p.plainPromise, "neither Accept nor Reject is called")
}

func TestRejectOverloaded_plainPromiseRejects(t *testing.T) {
	p := &plainPromise{}
	srebreaker.RejectOverloaded(p, "503 overloaded")
	assert.Equal(t, plainPromise{rejects: 1}, *p, "a promise without RejectOverloaded records a failure")
}

func TestRejectOverloaded_nil(t *testing.T) {
	assert.NotPanics(t, func() { srebreaker.RejectOverloaded(nil, "503 overloaded") })
}
