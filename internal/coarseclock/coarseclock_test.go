package coarseclock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fake is a clock whose system time and goroutine the test drives.
type fake struct {
	*Clock
	now    time.Duration
	spawns int
}

func newFake() *fake {
	f := &fake{}
	f.Clock = newClock(func() time.Duration { return f.now }, nil)
	f.Clock.spawn = func(*Clock) { f.spawns++ }
	return f
}

func TestClock_Now_firstReadStartsTicking(t *testing.T) {
	f := newFake()
	f.now = 5 * time.Millisecond
	assert.Equal(t, 5*time.Millisecond, f.Now(), "the first read reads the system clock")
	assert.Equal(t, 1, f.spawns)
	f.now = 7 * time.Millisecond
	assert.Equal(t, 5*time.Millisecond, f.Now(), "later reads see the last tick")
	assert.Equal(t, 1, f.spawns, "one goroutine ticks")
	require.True(t, f.tick())
	assert.Equal(t, 7*time.Millisecond, f.Now())
}

func TestClock_tick_stopsWhenIdleAndRestartsOnRead(t *testing.T) {
	f := newFake()
	f.Now()
	idleTicks := int(IdleAfter / MaxPeriod)
	for i := range idleTicks - 1 {
		f.now += MaxPeriod
		require.True(t, f.tick(), "tick %d, within IdleAfter", i)
	}
	f.Now() // a reader resets the idle time; the next tick sees the read
	for range idleTicks {
		f.now += MaxPeriod
		require.True(t, f.tick())
	}
	f.now += MaxPeriod
	assert.False(t, f.tick(), "stops once nothing read it for IdleAfter")
	assert.Equal(t, 1, f.spawns)

	f.now += time.Hour
	assert.Equal(t, f.now, f.Now(), "a read after the stop reads the system clock")
	assert.Equal(t, 2, f.spawns, "and starts ticking again")
	assert.True(t, f.tick(), "with a fresh idle count")
}

func TestClock_Require_clampsAndNeverCoarsens(t *testing.T) {
	f := newFake()
	assert.Equal(t, MaxPeriod, f.Period())
	f.Require(time.Hour)
	assert.Equal(t, MaxPeriod, f.Period())
	f.Require(4 * time.Millisecond)
	assert.Equal(t, 4*time.Millisecond, f.Period())
	f.Require(8 * time.Millisecond)
	assert.Equal(t, 4*time.Millisecond, f.Period(), "never made coarser")
	f.Require(time.Nanosecond)
	assert.Equal(t, MinPeriod, f.Period())
	f.Require(-time.Second)
	assert.Equal(t, MinPeriod, f.Period())
}

func TestClock_readingsNeverGoBackwards(t *testing.T) {
	f := newFake()
	f.now = time.Second
	f.Now()
	f.now = time.Millisecond // a late tick with an older reading loses
	f.tick()
	assert.Equal(t, time.Second, f.Now())
}

func TestClock_concurrentReadsStartOneGoroutine(t *testing.T) {
	var mu sync.Mutex
	spawns := 0
	c := newClock(func() time.Duration { return time.Second }, nil)
	c.spawn = func(*Clock) { mu.Lock(); spawns++; mu.Unlock() }
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				assert.Equal(t, time.Second, c.Now())
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, spawns)
}

func TestNow_processClockRuns(t *testing.T) {
	a := Now()
	b := Now()
	assert.GreaterOrEqual(t, b, a)
	assert.GreaterOrEqual(t, a, time.Duration(0))
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = Now() }))
	Require(MaxPeriod)
	assert.LessOrEqual(t, process.Period(), MaxPeriod)
}
