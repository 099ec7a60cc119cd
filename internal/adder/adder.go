// Package adder provides a counter that many goroutines can add to at once
// without sharing a cache line.
//
// An [Adder] is one word while adds do not collide. The first add that finds
// another add racing it spreads the counter over one cell per processor
// (rounded up to a power of two, at most [MaxCells]), each on its own cache
// line, so adds made on different processors no longer contend. Reading the
// counter then sums the cells, which costs more: the design favours counters
// that are added to on every call and read less often, or read while they
// are not being added to.
//
// An Adder is safe for concurrent use by multiple goroutines. The zero value
// is a counter at 0.
package adder

import (
	"runtime"
	"sync/atomic"
	_ "unsafe" // for go:linkname
)

// MaxCells is the most cells an [Adder] spreads over, 64 bytes each.
const MaxCells = 32

// cacheLine is the size the cells are padded to.
const cacheLine = 64

// Adder is a counter of uint64 values that scales with concurrent adds.
type Adder struct {
	base  atomic.Uint64
	cells atomic.Pointer[[]cell] // nil until an add found contention
}

// cell is one processor's share of a counter, alone on its cache line.
type cell struct {
	n atomic.Uint64
	_ [cacheLine - 8]byte
}

// Add adds delta to the counter. It does not allocate, except once, on the
// first contended add, to make the cells.
func (a *Adder) Add(delta uint64) {
	if cs := a.cells.Load(); cs != nil {
		c := *cs
		c[procID()&(len(c)-1)].n.Add(delta)
		return
	}
	v := a.base.Load()
	if a.base.CompareAndSwap(v, v+delta) {
		return
	}
	a.spread()
	a.Add(delta)
}

// spread makes the cells, once.
func (a *Adder) spread() {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < MaxCells {
		n *= 2
	}
	cs := make([]cell, n)
	a.cells.CompareAndSwap(nil, &cs)
}

// Load returns the counter: the sum of every add so far, minus what [Adder.Take]
// took. Adds made while Load runs may or may not be included.
func (a *Adder) Load() uint64 {
	n := a.base.Load()
	if cs := a.cells.Load(); cs != nil {
		for i := range *cs {
			n += (*cs)[i].n.Load()
		}
	}
	return n
}

// Take returns the counter and resets it to 0. Every add is counted exactly
// once: by this Take, or by the next Load or Take.
func (a *Adder) Take() uint64 {
	n := a.base.Swap(0)
	if cs := a.cells.Load(); cs != nil {
		for i := range *cs {
			n += (*cs)[i].n.Swap(0)
		}
	}
	return n
}

// Spread reports whether the counter has spread over cells.
func (a *Adder) Spread() bool { return a.cells.Load() != nil }

// procID returns the index of the processor (the runtime's P) the calling
// goroutine runs on. The goroutine may move right after; the value only
// picks a cell, so a stale one costs a shared cache line, never a lost add.
func procID() int {
	id := runtime_procPin()
	runtime_procUnpin()
	return id
}

// The runtime keeps these two linkable for packages outside the standard
// library; sync.Pool uses the same pair to find its per-processor caches.
//
//go:linkname runtime_procPin runtime.procPin
func runtime_procPin() int

//go:linkname runtime_procUnpin runtime.procUnpin
func runtime_procUnpin()
