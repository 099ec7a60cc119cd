package proba

import (
	"math/rand/v2"
	"sync"
)

// Proba returns true with a given probability. Create one with [New] or
// [NewSeeded]; a nil *Proba behaves like one from New.
//
// A Proba is safe for concurrent use by multiple goroutines.
type Proba struct {
	mu  sync.Mutex
	src *rand.Rand // guarded by mu; nil means the runtime's generator
}

// New returns a Proba that draws from math/rand/v2's package-level
// generator, which is safe for concurrent use without a lock.
func New() *Proba {
	return &Proba{}
}

// NewSeeded returns a Proba whose draws are fixed by seed: two of them made
// with the same seed answer the same sequence of calls alike. It takes a
// lock per draw, so it is meant for tests and simulations.
func NewSeeded(seed uint64) *Proba {
	return &Proba{src: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// TrueOnProba reports true with probability proba. It is never true for
// proba <= 0 or NaN, always true for proba >= 1 (+Inf included), and draws a
// random number only in between.
func (p *Proba) TrueOnProba(proba float64) bool {
	if !(proba > 0) { // also catches NaN
		return false
	}
	if proba >= 1 {
		return true
	}
	return p.float64() < proba
}

// Float64 draws a number in [0, 1), from the same source as TrueOnProba:
// for callers that compare the draw themselves (a breaker multiplies where
// a probability would need a division).
func (p *Proba) Float64() float64 { return p.float64() }

// float64 draws a number in [0, 1).
func (p *Proba) float64() float64 {
	if p == nil || p.src == nil {
		return rand.Float64()
	}
	p.mu.Lock()
	f := p.src.Float64()
	p.mu.Unlock()
	return f
}
