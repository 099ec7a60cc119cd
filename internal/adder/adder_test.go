package adder

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAdder_zeroValue(t *testing.T) {
	var a Adder
	assert.Equal(t, uint64(0), a.Load())
	assert.Equal(t, uint64(0), a.Take())
	assert.False(t, a.Spread())
}

func TestAdder_Add_uncontendedStaysOneWord(t *testing.T) {
	var a Adder
	for range 1000 {
		a.Add(3)
	}
	assert.Equal(t, uint64(3000), a.Load())
	assert.False(t, a.Spread(), "adds from one goroutine never collide")
	assert.Equal(t, uint64(3000), a.Take())
	assert.Equal(t, uint64(0), a.Load())
}

func TestAdder_afterSpreadNothingIsLost(t *testing.T) {
	var a Adder
	a.Add(5)
	a.spread() // as a contended add would
	assert.True(t, a.Spread())
	for range 100 {
		a.Add(2)
	}
	assert.Equal(t, uint64(205), a.Load(), "the base and the cells add up")
	assert.Equal(t, uint64(205), a.Take())
	assert.Equal(t, uint64(0), a.Load())
	a.spread()
	a.Add(1)
	assert.Equal(t, uint64(1), a.Load(), "spreading twice keeps the first cells")
}

func TestAdder_concurrentAddsAndTakesAddUp(t *testing.T) {
	var a Adder
	const goroutines, adds = 8, 5000
	var taken uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() { // takes while the adds run, as a window does at each bucket
		defer close(done)
		for range 200 {
			taken += a.Take()
		}
	}()
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range adds {
				a.Add(1)
			}
		}()
	}
	wg.Wait()
	<-done
	assert.Equal(t, uint64(goroutines*adds), taken+a.Load(), "each add is counted exactly once")
}

func TestAdder_Add_doesNotAllocate(t *testing.T) {
	var a Adder
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { a.Add(1) }))
	a.spread()
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { a.Add(1) }), "spread")
}

func TestProcID_inRange(t *testing.T) {
	id := procID()
	assert.GreaterOrEqual(t, id, 0)
	assert.Less(t, id, 1<<16)
}
