package serverside

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
)

// openFast opens l's fast path at period, the limit l has: as a tick of
// period × samplesPerTick arrivals would.
func openFast(l *Limiter, period int64) {
	l.mu.Lock()
	l.advance(l.now()) // the limiter's clock is now's: no tick ends before the next
	l.period = period
	l.unlock()
}

// TestLimiter_fastPath_opensOnFastArrivals: a tick of 2,000 arrivals,
// none waiting, opens the fast path at one call in ten: of the next
// 1,000, 900 go in without the lock or the clock (their slots carry no
// start), 100 take the locked path, their latency a sample; the
// arrivals and completions of all 1,000 are counted in their tick.
func TestLimiter_fastPath_opensOnFastArrivals(t *testing.T) {
	l, mock := newMockLimiter()
	l.Force(100, false)
	cycle := func() Slot {
		s, err := l.Acquire(context.Background(), criticality.Default)
		require.NoError(t, err)
		s.Release(true)
		return s
	}
	for range 2_000 {
		assert.False(t, cycle().start.IsZero(), "every call takes the locked path while calls arrive slowly")
	}
	assert.Zero(t, l.gate.Load(), "closed")
	mock.Add(tickLength)
	cycle() // ends the tick of 2,000: the fast path opens as it returns
	assert.Equal(t, int64(100)<<periodBits|10, l.gate.Load(), "open at the limit's 100 calls, one call in 10 sampled")

	fast := 0
	for range 1_000 {
		if cycle().start.IsZero() {
			fast++
		}
	}
	assert.Equal(t, 900, fast)
	mock.Add(tickLength)
	st := l.Stats()
	assert.Zero(t, st.InFlight)
	prev := l.ticks[(l.tick-1)%rateTicks]
	assert.Equal(t, 1_001, prev.arrivals, "the fast path's arrivals are counted in their tick")
	assert.Equal(t, 1_001, prev.completions, "and their completions")
	assert.Equal(t, int64(5), l.period, "1,001 arrivals: one call in 5 of the next tick's")
}

// TestLimiter_fastPath_closesForAWaitingCall: a call that finds the limit
// reached closes the fast path as it waits, and a slot the fast path let
// in, given back, lets it in.
func TestLimiter_fastPath_closesForAWaitingCall(t *testing.T) {
	l, _ := newMockLimiter()
	l.Force(4, false)
	openFast(l, 10)
	slots := fill(t, l, 4)
	for _, s := range slots {
		require.True(t, s.start.IsZero(), "let in by the fast path")
	}
	got := make(chan error, 1)
	go func() {
		s, err := l.Acquire(context.Background(), criticality.Sheddable)
		s.Release(true)
		got <- err
	}()
	waitQueued(t, l, 1)
	assert.Zero(t, l.gate.Load(), "closed while a call waits")
	slots[0].Release(true)
	require.NoError(t, <-got)
	for _, s := range slots[1:] {
		s.Release(true)
	}
	st := l.Stats()
	assert.Zero(t, st.InFlight)
	assert.NotZero(t, l.gate.Load(), "open again once none waits")
}

// waitQueued waits until n calls wait in l's queue.
func waitQueued(t *testing.T, l *Limiter, n int) {
	t.Helper()
	for {
		l.mu.Lock()
		q := l.queued
		l.mu.Unlock()
		if q >= n {
			return
		}
		runtime.Gosched()
	}
}

// TestLimiter_fastPath_roomGivenBackAsACallQueues: a slot the fast path
// let in, given back after a call found no room and before it joined the
// queue, lets that call in: the call closes the gate, then looks for
// room again; the slot, given back with the gate open, takes no lock.
func TestLimiter_fastPath_roomGivenBackAsACallQueues(t *testing.T) {
	l, _ := newMockLimiter()
	l.Force(4, false)
	openFast(l, 10)
	slots := fill(t, l, 4)
	testHookQueue = func() {
		testHookQueue = nil
		slots[0].Release(true) // the gate is open: no lock
	}
	defer func() { testHookQueue = nil }()
	_, w, err := l.join(criticality.Default)
	require.NoError(t, err)
	require.NotNil(t, w, "the call found no room")
	assert.Equal(t, granted, w.state, "the room given back is the call's")
	assert.Equal(t, int64(4), l.inFlight.Load())
	assert.Zero(t, l.Stats().Queued)
}

// TestLimiter_fastPath_strandsNoCall: calls that go in and out by the
// fast path while others wait for room, on eight goroutines at once,
// all go in: a room given back as a call joins the queue goes to a call
// waiting (see Slot.releaseFast). A call left waiting with room free
// would never go in (the mock clock stands: no stall wakes it).
func TestLimiter_fastPath_strandsNoCall(t *testing.T) {
	l, _ := newMockLimiter()
	l.Force(2, false)
	openFast(l, 4)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2_000 {
				level := criticality.Level((g + i) % criticality.Levels)
				s, err := l.Acquire(context.Background(), level)
				if !assert.NoError(t, err) {
					return
				}
				s.Release(true)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a bound on a failure, no wait for time to pass
		t.Fatal("a call waits with room free")
	}
	st := l.Stats()
	assert.Zero(t, st.InFlight)
	assert.Zero(t, st.Queued)
}

// TestLimiter_fastPath_releaseWhileAway: a request the fast path let in,
// answered while a guarded call it made is still out, gives back no
// more room than it held, and a late Return takes none.
func TestLimiter_fastPath_releaseWhileAway(t *testing.T) {
	l, _ := newMockLimiter()
	l.Force(4, false)
	openFast(l, 10)
	s := fill(t, l, 1)[0]
	require.True(t, s.start.IsZero())
	ctx, m := chain.With(context.Background(), criticality.Default)
	s.Hold(m)
	away := chain.Leave(ctx)
	assert.Equal(t, int64(0), l.inFlight.Load())
	s.Release(true)
	assert.Equal(t, int64(0), l.inFlight.Load())
	away.Return()
	assert.Equal(t, int64(0), l.inFlight.Load(), "a Return after the request was answered takes no room")

	s = fill(t, l, 1)[0]
	ctx, m = chain.With(context.Background(), criticality.Default)
	s.Hold(m)
	chain.Leave(ctx).Return()
	assert.Equal(t, int64(1), l.inFlight.Load(), "back from its guarded call, the request holds its room")
	s.Release(true)
	assert.Equal(t, int64(0), l.inFlight.Load())
}

// TestLimiter_fastPath_closedOutOfCalm: the fast path is closed while
// the server is overloaded, a queue stands, a probe runs, the queue has
// turned a call away, or the limiter rejects calls; open otherwise.
func TestLimiter_fastPath_closedOutOfCalm(t *testing.T) {
	for name, set := range map[string]func(*Limiter){
		"calm":       func(*Limiter) {},
		"overloaded": func(l *Limiter) { l.overload = true },
		"stands":     func(l *Limiter) { l.stands = true },
		"probing":    func(l *Limiter) { l.probing = true },
		"filled":     func(l *Limiter) { l.filled = true },
		"rejecting":  func(l *Limiter) { l.rejecting = true },
	} {
		t.Run(name, func(t *testing.T) {
			l, _ := newMockLimiter()
			l.Force(8, false)
			openFast(l, 4)
			l.mu.Lock()
			set(l)
			l.unlock()
			assert.Equal(t, name == "calm", l.gate.Load() != 0)
		})
	}
}
