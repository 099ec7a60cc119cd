package srebreaker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker"
)

// plainPromise implements only go-zero's two methods.
type plainPromise struct{ accepts, rejects int }

func (p *plainPromise) Accept()       { p.accepts++ }
func (p *plainPromise) Reject(string) { p.rejects++ }

// ignoringPromise also implements Ignorer.
type ignoringPromise struct {
	plainPromise
	ignores int
}

func (p *ignoringPromise) Ignore() { p.ignores++ }

func TestIgnore_callsIgnorer(t *testing.T) {
	p := &ignoringPromise{}
	srebreaker.Ignore(p)
	assert.Equal(t, 1, p.ignores)
	assert.Equal(t, plainPromise{}, p.plainPromise, "neither Accept nor Reject is called")
}

func TestIgnore_plainPromise(t *testing.T) {
	p := &plainPromise{}
	srebreaker.Ignore(p)
	assert.Equal(t, plainPromise{}, *p, "a promise without Ignore records nothing")
}

func TestIgnore_nil(t *testing.T) {
	assert.NotPanics(t, func() { srebreaker.Ignore(nil) })
}
