package breaker

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCounts_contendedSpreadsAndKeepsEveryCount(t *testing.T) {
	b := MustNew().(*googleBreaker)
	b.counts.contended()
	sp := b.counts.spread.Load()
	require.NotNil(t, sp)

	const goroutines, perGoroutine = 4, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perGoroutine {
				s := b.counts.pick()
				assert.True(t, s.spread, "a contended level counts on its stripes")
				s.add(&s.successes)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(goroutines*perGoroutine), b.counts.sum().Successes)
	assert.Equal(t, int64(goroutines*perGoroutine), b.counts.take().Successes)
	assert.Zero(t, b.counts.sum().Successes, "take empties every stripe")
}

func TestCounts_pickKeepsAProcessorOnItsStripe(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops a quarter of what a sync.Pool is given")
	}
	b := MustNew().(*googleBreaker)
	b.counts.contended()
	first := b.counts.pick()
	same := 0
	for range 1000 {
		if b.counts.pick() == first {
			same++
		}
	}
	// A garbage collection or a move to another processor may hand
	// another stripe now and then; most picks find the same one.
	assert.Greater(t, same, 900)
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { b.counts.pick() }))
}
