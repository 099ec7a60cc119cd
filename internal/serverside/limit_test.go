package serverside

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
)

func newMockLimiter() (*Limiter, *clock.Mock) {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return NewLimiter(mock), mock
}

// newStartedLimiter returns a Limiter past its start, with limit, noLoad
// remembered, and a probe made this second (none is due), and its
// clock's time.
func newStartedLimiter(noLoad time.Duration, limit float64) (*Limiter, time.Time) {
	l, mock := newMockLimiter()
	now := mock.Now()
	l.minimaSec = now.Unix()
	l.minima[now.Unix()%maxNoLoadSeconds] = noLoad
	l.probeSec = now.Unix()
	l.limit, l.starting = limit, false
	return l, now
}

// acquired is the outcome of an Acquire run in a goroutine.
type acquired struct {
	slot Slot
	err  error
}

// acquireAsync starts an Acquire and waits until it is queued.
func acquireAsync(t *testing.T, l *Limiter, ctx context.Context, level criticality.Level) <-chan acquired {
	t.Helper()
	before := l.Stats()
	ch := make(chan acquired, 1)
	go func() {
		s, err := l.Acquire(ctx, level)
		ch <- acquired{s, err}
	}()
	for {
		st := l.Stats()
		if st.Queued != before.Queued || st.Rejected != before.Rejected || len(ch) > 0 {
			return ch
		}
		runtime.Gosched()
	}
}

func fill(t *testing.T, l *Limiter, n int) []Slot {
	t.Helper()
	slots := make([]Slot, n)
	for i := range slots {
		s, err := l.Acquire(context.Background(), criticality.Default)
		require.NoError(t, err)
		slots[i] = s
	}
	return slots
}

// TestLimiter_now_systemClock: on the system clock the limiter reads the
// time it was made plus the monotonic time since, within what time.Now
// reads around it; a given clock is read as it is.
func TestLimiter_now_systemClock(t *testing.T) {
	l := NewLimiter(nil)
	before := time.Now()
	now := l.now()
	after := time.Now()
	assert.False(t, now.Before(before) || now.After(after), "%v not within [%v, %v]", now, before, after)
	assert.True(t, l.system)

	m, mock := newMockLimiter()
	assert.Equal(t, mock.Now(), m.now())
	assert.False(t, m.system)
}

func TestLimiter_Acquire_queuesPastTheLimit(t *testing.T) {
	l, _ := newMockLimiter()
	slots := fill(t, l, initialLimit)
	assert.Equal(t, initialLimit, l.Stats().InFlight)
	waiting := acquireAsync(t, l, context.Background(), criticality.Default)
	assert.Equal(t, 1, l.Stats().Queued)
	slots[0].Release(true)
	got := <-waiting
	require.NoError(t, got.err)
	st := l.Stats()
	assert.Equal(t, 0, st.Queued)
	assert.Equal(t, initialLimit, st.InFlight)
	got.slot.Release(true)
	assert.Equal(t, initialLimit-1, l.Stats().InFlight)
}

// olderFirst forces a limiter to 2 calls at once, overloaded or not, with
// capacity, and holds both; queues a call at older, then, a millisecond
// later, one at newer; frees a slot and reports whether the older call
// went in. The other goes in once the second slot is free.
func olderFirst(t *testing.T, overloaded bool, capacity float64, older, newer criticality.Level) bool {
	t.Helper()
	l, mock := newMockLimiter()
	l.Force(2, overloaded)
	l.capacity = capacity
	l.tick = mock.Now().UnixNano() / int64(tickLength) // no tick ends: overload stays as forced
	slots := fill(t, l, 2)
	o := acquireAsync(t, l, context.Background(), older)
	mock.Add(time.Millisecond)
	n := acquireAsync(t, l, context.Background(), newer)
	slots[0].Release(true)
	var got acquired
	wasOlder, other := false, o
	select {
	case got = <-o:
		wasOlder, other = true, n
	case got = <-n:
	}
	require.NoError(t, got.err)
	assert.Empty(t, other, "the other still waits")
	slots[1].Release(true)
	require.NoError(t, (<-other).err)
	return wasOlder
}

// TestLimiter_Release_order: while the handlers are known to serve every
// call, the oldest goes in first, whatever its level; overloaded, or
// before capacity is known, the highest level goes first.
func TestLimiter_Release_order(t *testing.T) {
	for _, tc := range []struct {
		name       string
		overloaded bool
		capacity   float64
		oldest     bool // the oldest goes in first, not the highest level
	}{
		{name: "not overloaded: the oldest first", capacity: 200, oldest: true},
		{name: "overloaded: the highest level first", overloaded: true, capacity: 200},
		{name: "capacity not known: the highest level first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.oldest, olderFirst(t, tc.overloaded, tc.capacity, criticality.SheddablePlus, criticality.CriticalPlus))
		})
	}
}

// In overload a level's calls go in newest first, but for the highest
// level's: no wait rejects them, so a burst's first call would wait out
// the whole burst behind the calls after it.
func TestLimiter_Release_overloadedWithinALevel(t *testing.T) {
	for _, tc := range []struct {
		level  criticality.Level
		oldest bool
	}{
		{level: criticality.CriticalPlus, oldest: true},
		{level: criticality.Critical},
		{level: criticality.SheddablePlus},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			assert.Equal(t, tc.oldest, olderFirst(t, true, 200, tc.level, tc.level))
		})
	}
}

func TestLimiter_Acquire_overloadedRejectsTheLowestLevelFirst(t *testing.T) {
	l, _ := newMockLimiter()
	l.Force(4, false)
	fill(t, l, 4)
	l.Force(4, true) // the queue holds √4 = 2 calls of the lowest level, one more per level above
	a := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	b := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	_, err := l.Acquire(context.Background(), criticality.Sheddable)
	assert.ErrorIs(t, err, ErrOverloaded, "a third SHEDDABLE call finds no room")

	// A CRITICAL_PLUS call takes the room of the oldest SHEDDABLE one.
	c := acquireAsync(t, l, context.Background(), criticality.CriticalPlus)
	assert.ErrorIs(t, (<-a).err, ErrOverloaded, "the oldest of the lowest level is rejected to make room")
	assert.Empty(t, b)
	assert.Empty(t, c)
	st := l.Stats()
	assert.Equal(t, [4]int64{0, 0, 0, 2}, st.Rejected, "rejections by level, highest first")
	assert.True(t, st.Overloaded)
	assert.Equal(t, 2, st.Queued)
}

// In overload the highest level queues up to the limit, a noLoad's wait,
// at least (here capacity and noLoad are not known), where the lowest
// queues √limit: on handlers with many slots, whose √limit is a small
// part of a noLoad, a few moments without a slot freeing would otherwise
// turn the highest level away.
func TestLimiter_Acquire_overloadedHighestLevelQueuesTheLimit(t *testing.T) {
	l, _ := newMockLimiter()
	l.Force(36, false)
	fill(t, l, 36)
	l.Force(36, true)
	var low []<-chan acquired
	for range 6 { // √36
		low = append(low, acquireAsync(t, l, context.Background(), criticality.Sheddable))
	}
	_, err := l.Acquire(context.Background(), criticality.Sheddable)
	assert.ErrorIs(t, err, ErrOverloaded, "the lowest level queues √36 calls")

	var high []<-chan acquired
	for range 36 {
		high = append(high, acquireAsync(t, l, context.Background(), criticality.CriticalPlus))
	}
	for _, a := range low {
		assert.ErrorIs(t, (<-a).err, ErrOverloaded, "each made room for the highest level")
	}
	assert.Equal(t, 36, l.Stats().Queued, "the highest level queues the limit")
	_, err = l.Acquire(context.Background(), criticality.CriticalPlus)
	assert.ErrorIs(t, err, ErrOverloaded, "and no more")
	_, err = l.Acquire(context.Background(), criticality.Critical)
	assert.ErrorIs(t, err, ErrOverloaded, "a lower level finds no room")
	assert.Equal(t, [4]int64{1, 1, 0, 7}, l.Stats().Rejected, "rejections by level, highest first")
	for _, a := range high {
		assert.Empty(t, a, "none of the highest level rejected")
	}
}

// In overload the highest level queues what the handlers serve in 5
// noLoads, half a second at most: it goes in first, so its queue is a
// burst of its own calls, or handlers that paused, and drains in that
// long. A step from 1× to 4× capacity turned a burst of it away at a
// noLoad's calls.
func TestLimiter_Acquire_overloadedHighestLevelQueuesFiveNoLoads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noLoad   time.Duration
		capacity float64
		want     int
	}{
		{"5 noLoads of 20 ms at 200 calls a second", 20 * time.Millisecond, 200, 20},
		{"half a second of 200 ms handlers, 10 calls a second", 200 * time.Millisecond, 10, 5},
		{"the √limit of the lowest level and one for each level above", 20 * time.Millisecond, 10, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newOverloadedLimiter(t)
			l.mu.Lock()
			l.minima[l.minimaSec%maxNoLoadSeconds] = tc.noLoad
			l.capacity = tc.capacity
			l.mu.Unlock()
			var high []<-chan acquired
			for range tc.want {
				high = append(high, acquireAsync(t, l, context.Background(), criticality.CriticalPlus))
			}
			assert.Equal(t, tc.want, l.Stats().Queued)
			_, err := l.Acquire(context.Background(), criticality.CriticalPlus)
			assert.ErrorIs(t, err, ErrOverloaded, "and no more")
			assert.Equal(t, [4]int64{1, 0, 0, 0}, l.Stats().Rejected)
			for _, a := range high {
				assert.Empty(t, a, "none of those queued rejected")
			}
		})
	}
}

func TestLimiter_Acquire_callerGoneLeavesTheQueue(t *testing.T) {
	l, _ := newMockLimiter()
	slots := fill(t, l, initialLimit)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := acquireAsync(t, l, ctx, criticality.Default)
	cancel()
	got := <-waiting
	assert.ErrorIs(t, got.err, context.Canceled)
	assert.Equal(t, 0, l.Stats().Queued)
	assert.Equal(t, [4]int64{}, l.Stats().Rejected, "a caller that left is no rejection")
	l.mu.Lock()
	assert.InDelta(t, 2.0, l.perSecond(l.tick, shortTicks, losses), 1e-9, "one call lost in half a second, counted for the overload rule")
	l.mu.Unlock()
	slots[0].Release(true)
	assert.Equal(t, initialLimit-1, l.Stats().InFlight)
}

// A queue full outside overload turns a call away: a call the queue
// lost, which the overload rule counts.
func TestLimiter_Acquire_fullQueueLosesACall(t *testing.T) {
	l, _ := newStartedLimiter(100*time.Millisecond, 1)
	fill(t, l, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var waiting []<-chan acquired
	for range l.queueCap(0) { // a second of waiting, 10 calls
		waiting = append(waiting, acquireAsync(t, l, ctx, criticality.Default))
	}
	_, err := l.Acquire(context.Background(), criticality.Default)
	assert.ErrorIs(t, err, ErrOverloaded)
	l.mu.Lock()
	assert.InDelta(t, 2.0, l.perSecond(l.tick, shortTicks, losses), 1e-9, "one call lost in half a second")
	assert.False(t, l.overload, "the overload rule judges it at the tick's end")
	l.mu.Unlock()
	cancel()
	for _, w := range waiting {
		assert.ErrorIs(t, (<-w).err, context.Canceled)
	}
}

func TestLimiter_endTick_overloadIsArrivalsPastCapacity(t *testing.T) {
	for _, tc := range []struct {
		name          string
		capacity      float64 // calls a second; 200 when 0
		perTick       int     // arrivals per tick over the last 2 s
		lastHalf      int     // arrivals per tick over the last 0.5 s, when not perTick
		wasOverloaded bool
		peak          float64 // capacity's highest, peakAgo seconds ago
		peakAgo       int64
		completions   int // per tick over the 2 s before the last 0.5 s
		lost          int // calls the queue lost over the last 0.5 s, in its last tick
		seen          int // ticks since the first call, when fewer than the window's
		want          bool
	}{
		// 200 calls a second: 20 a tick; chance is 2√ of a window's count.
		{name: "at capacity", perTick: 20, want: false},
		{name: "1.2x", perTick: 24, want: false},
		{name: "1.5x over 2 s", perTick: 30, want: true},
		{name: "1.4x over 2 s: within chance of 1.3x", perTick: 28, want: false},
		{name: "a burst of 3x for 0.5 s", perTick: 18, lastHalf: 60, want: true},
		{name: "a burst of 3x for 0.2 s", perTick: 18, lastHalf: 30, want: false},
		{name: "stays overloaded at 1.2x", perTick: 24, wasOverloaded: true, want: true},
		{name: "stays overloaded at 1.05x", perTick: 21, wasOverloaded: true, want: true},
		{name: "stays overloaded within chance of capacity", perTick: 19, wasOverloaded: true, want: true},
		{name: "ends below capacity past chance", perTick: 17, wasOverloaded: true, want: false},
		{name: "ends once the last 0.5 s fall below 0.9x past chance", perTick: 80, lastHalf: 13, wasOverloaded: true, want: false},
		{name: "4x before the last 0.5 s at 0.5x starts none", perTick: 80, lastHalf: 10, want: false},
		{name: "1.5x over 2 s, the last 0.5 s at capacity, starts none", perTick: 30, lastHalf: 20, want: false},
		// 20 calls a second, 2 a tick: a half second holds 10.
		{name: "few calls: 2x, a half second at 0.5x by chance", capacity: 20, perTick: 4, lastHalf: 1, wasOverloaded: true, want: true},
		{name: "few calls: 0.9x, a half second at 2.5x by chance", capacity: 20, perTick: 2, lastHalf: 5, want: false},
		{name: "few calls: 4x", capacity: 20, perTick: 8, want: true},
		// A heavy tail: slow calls held every slot for a second, and
		// capacity fell to 120 from the 200 the handlers served 3 s ago.
		{name: "1.7x a capacity that dipped, 1x its peak: none", capacity: 120, peak: 200, peakAgo: 3, perTick: 20, want: false},
		{name: "1.7x a capacity that fell, its peak forgotten: starts", capacity: 120, peak: 200, peakAgo: 5, perTick: 20, want: true},
		{name: "2x a capacity that dipped over 0.5 s: starts", capacity: 100, peak: 200, peakAgo: 1, perTick: 20, lastHalf: 25, want: true},
		// Capacity first measured in a heavy tail's slow cluster of the
		// last 0.5 s, below what the handlers completed before it.
		{name: "1.5x a capacity that dipped, 1.3x its completions: none", capacity: 120, perTick: 19, completions: 20, want: false},
		{name: "1.5x a capacity, its completions no more: starts", capacity: 120, perTick: 19, completions: 10, want: true},
		{name: "2x a capacity that dipped over 0.5 s, below its completions: starts", capacity: 120, perTick: 19, lastHalf: 40, completions: 20, want: true},
		// Arrivals a little past capacity grow the queue (oldest first)
		// until it is full or its calls wait out their callers' deadlines.
		{name: "1.3x, the queue lost 2.3 %: starts", perTick: 26, lost: 3, want: true},
		{name: "1.3x, the queue lost 1.5 %: none", perTick: 26, lost: 2, want: false},
		{name: "0.9x, the queue lost calls: none", perTick: 18, lost: 50, want: false},
		{name: "1.1x, within chance of capacity, the queue lost calls: none", perTick: 22, lost: 50, want: false},
		// A server's first ticks are judged on themselves, not on a window
		// counting the ticks before its first call as idle.
		{name: "4x from the first call, 2 ticks in: starts", perTick: 80, seen: 2, want: true},
		{name: "0.9x from the first call, 2 ticks in: none", perTick: 18, seen: 2, want: false},
		{name: "1.2x from the first call, 1 tick in: within chance", perTick: 24, seen: 1, want: false},
		{name: "4x from the first call, 0 ticks in: none judged", perTick: 80, seen: -1, want: false},
		{name: "1.5x from the first call, 1 s in: the long window's rule waits for 2 s", perTick: 30, seen: 10, want: false},
		{name: "1.5x from the first call, 2 s in", perTick: 30, seen: longTicks, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newMockLimiter()
			l.capacity = cmp.Or(tc.capacity, 200)
			l.overload = tc.wasOverloaded
			const now = 1000
			if tc.seen != 0 {
				l.seen, l.firstTick = true, now-int64(max(tc.seen, 0))
			}
			for i := int64(1); i <= rateTicks; i++ {
				if tc.seen != 0 && i > int64(tc.seen) {
					break // before the first call
				}
				n := tc.perTick
				if tc.lastHalf != 0 && i <= shortTicks {
					n = tc.lastHalf
				}
				c := tc.completions
				if i <= shortTicks {
					c = 0
				}
				lost := 0
				if i == 1 {
					lost = tc.lost
				}
				l.ticks[(now-i)%rateTicks] = tickCounts{n: now - i, arrivals: n, completions: c, lost: lost}
			}
			if tc.peak > 0 {
				sec := now * int64(tickLength) / int64(time.Second)
				l.peakSec = sec - tc.peakAgo
				l.peaks[l.peakSec%peakSeconds] = tc.peak
			}
			l.tick = now - 1
			l.endTick(now)
			assert.Equal(t, tc.want, l.overload)
		})
	}
}

// A queue that stands, never empty for 4 s and not draining, past 5
// noLoads of calls, while arrivals are at least capacity, is held to 5
// noLoads of calls: 1.05x is within chance of capacity for seconds, and
// its queue, served oldest first, would grow to its callers' deadlines. A
// burst's queue drains, and a queue that empties now and then stands not.
// After 1.9 s it stands on arrivals past what the handlers have shown
// they serve; never while they serve less (a heavy tail's slow calls
// hold the slots), their queue soon to drain.
func TestLimiter_endTick_aStandingQueueIsHeld(t *testing.T) {
	for _, tc := range []struct {
		name         string
		perTick      int   // arrivals; capacity is 20 a tick
		served       int   // completions a tick, 20 unless set
		busyTicks    int64 // since the queue was last empty; long ago unless set
		newer, older int   // the fewest queued in each tick of the newer and older second
		emptyTickAgo int64
		staleTickAgo int64
		want         bool
	}{
		{name: "1.05x, 30 queued, standing 1.9 s: not yet", perTick: 21, busyTicks: 19, newer: 30, older: 25, want: false},
		{name: "1.05x, 30 queued, standing 4 s: starts", perTick: 21, busyTicks: 40, newer: 30, older: 25, want: true},
		{name: "1.15x, 30 queued, standing 1.9 s: starts", perTick: 23, busyTicks: 19, newer: 30, older: 25, want: true},
		{name: "1.05x, 30 queued, standing 4 s, the handlers a few percent below their peak: starts", perTick: 21, served: 19, busyTicks: 40, newer: 30, older: 25, want: true},
		{name: "1.15x, 30 queued, standing 1.9 s, the handlers a few percent below their peak: starts", perTick: 23, served: 19, busyTicks: 19, newer: 30, older: 25, want: true},
		{name: "1.15x, 30 queued, standing 1.9 s, the handlers slowed: none", perTick: 23, served: 12, busyTicks: 19, newer: 30, older: 25, want: false},
		{name: "1.15x, 30 queued, standing 4 s, the handlers slowed: none", perTick: 23, served: 12, busyTicks: 40, newer: 30, older: 25, want: false},
		{name: "1.05x, 30 queued, growing from 25: starts", perTick: 21, newer: 30, older: 25, want: true},
		{name: "1x, 30 queued, holding: starts", perTick: 20, newer: 30, older: 30, want: true},
		{name: "0.95x, 30 queued, holding: none", perTick: 19, newer: 30, older: 30, want: false},
		{name: "1.05x, 30 queued, draining from 40: none", perTick: 21, newer: 30, older: 40, want: false},
		// 5 noLoads of 20 ms at 200 calls a second: 20 calls.
		{name: "1.05x, 20 queued: none", perTick: 21, newer: 20, older: 15, want: false},
		{name: "1.05x, 30 queued, empty 1.5 s ago: none", perTick: 21, newer: 30, older: 25, emptyTickAgo: 15, want: false},
		{name: "1.05x, 30 queued, a tick 1.8 s ago unseen: none", perTick: 21, newer: 30, older: 25, staleTickAgo: 18, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newStartedLimiter(20*time.Millisecond, 5)
			l.capacity = 200
			const now = 1000
			for i := int64(1); i <= rateTicks; i++ {
				least := tc.newer
				if i > standTicks/2 {
					least = tc.older
				}
				if i == tc.emptyTickAgo {
					least = 0
				}
				n := now - i
				if i == tc.staleTickAgo {
					n -= rateTicks
				}
				served := tc.served
				if served == 0 {
					served = 20
				}
				l.ticks[(now-i)%rateTicks] = tickCounts{n: n, arrivals: tc.perTick, completions: served, least: least}
			}
			if tc.busyTicks > 0 {
				l.busySince = now - tc.busyTicks
			}
			l.tick = now - 1
			l.queued = tc.newer
			l.endTick(now)
			assert.Equal(t, tc.want, l.stands)
			assert.False(t, l.overload, "no overload: the arrivals are within chance of capacity")
			if tc.want && tc.served == 0 {
				assert.Equal(t, 20, l.queueCap(0), "5 noLoads of 20 ms at 200 calls a second")
				assert.Equal(t, 23, l.queueCap(3), "and one more for each level above the lowest")
			}
		})
	}
}

// The queue's stand begins with the tick after the last to see it empty.
func TestLimiter_endTick_busySinceTheLastEmptyTick(t *testing.T) {
	l, _ := newStartedLimiter(20*time.Millisecond, 5)
	l.capacity = 200
	const now = 1000
	l.busySince = now - 30
	l.tick = now - 1
	l.ticks[(now-1)%rateTicks] = tickCounts{n: now - 1, arrivals: 20, completions: 20, least: 3}
	l.queued = 3
	l.endTick(now)
	assert.Equal(t, int64(now-30), l.busySince, "never empty: the stand goes on")
	l.ticks[now%rateTicks].least = 0
	l.endTick(now + 1)
	assert.Equal(t, int64(now+1), l.busySince, "empty in tick now")
}

// A standing queue is held until a tick sees it empty.
func TestLimiter_endTick_aStandingQueueEndsOnceEmpty(t *testing.T) {
	for _, emptied := range []bool{false, true} {
		l, _ := newStartedLimiter(20*time.Millisecond, 5)
		l.capacity, l.stands = 200, true
		const now = 1000
		for i := int64(1); i <= rateTicks; i++ {
			l.ticks[(now-i)%rateTicks] = tickCounts{n: now - i, arrivals: 21, completions: 20, least: 20}
		}
		if emptied {
			l.ticks[(now-1)%rateTicks].least = 0
		}
		l.tick = now - 1
		l.endTick(now)
		assert.Equal(t, !emptied, l.stands, "emptied: %v", emptied)
		if emptied {
			assert.Equal(t, int(200*maxWait.Seconds()), l.queueCap(0),
				"a second of expected wait again, at what the handlers serve (the limit's 5 calls a noLoad are more)")
		}
	}
}

// The fewest calls queued in a tick follow the queue as it drains: the
// calls handed a slot, rejected, or whose callers left.
func TestLimiter_least_followsTheQueue(t *testing.T) {
	l, now := newStartedLimiter(20*time.Millisecond, 1)
	mock := l.clock.(*clock.Mock)
	l.mu.Lock()
	l.advance(now)
	l.mu.Unlock()
	first, err := l.Acquire(context.Background(), criticality.Critical)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan error, 3)
	for _, c := range []context.Context{context.Background(), context.Background(), ctx} {
		go func() {
			s, err := l.Acquire(c, criticality.Critical)
			if err == nil {
				s.Release(true)
			}
			results <- err
		}()
	}
	require.Eventually(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.queued == 3 }, time.Minute, time.Millisecond)
	mock.Add(tickLength) // a new tick, which begins with the 3 queued
	l.mu.Lock()
	l.advance(mock.Now())
	assert.Equal(t, 3, l.ticks[l.tick%rateTicks].least)
	l.mu.Unlock()
	cancel()
	assert.ErrorIs(t, <-results, context.Canceled)
	l.mu.Lock()
	assert.Equal(t, 2, l.ticks[l.tick%rateTicks].least, "a caller left")
	l.mu.Unlock()
	first.Release(true)
	require.NoError(t, <-results)
	require.NoError(t, <-results)
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Equal(t, 0, l.ticks[l.tick%rateTicks].least, "the queue drained")
}

func TestLimiter_endTick_capacityIsWhatBusyHandlersServe(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overload  bool
		queued    int
		emptySeen bool
		idleSeen  bool
		want      float64
	}{
		{name: "the queue held calls throughout: follows", queued: 3, want: 200 + 0.2*(100-200)},
		{name: "the queue emptied: not busy, stays", queued: 3, emptySeen: true, want: 200},
		{name: "overloaded, the short queue emptied as it rejected: follows", overload: true, emptySeen: true, want: 200 + 0.2*(100-200)},
		{name: "overloaded, but the handlers had room: arrivals fell, stays", overload: true, emptySeen: true, idleSeen: true, want: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newMockLimiter()
			l.capacity, l.starting, l.overload, l.queued = 200, false, tc.overload, tc.queued
			l.emptySeen, l.idleSeen = tc.emptySeen, tc.idleSeen
			const now = 1000
			l.tick = now - 1
			l.ticks[l.tick%rateTicks] = tickCounts{n: l.tick, completions: 10, arrivals: 20} // 100 a second, the service slowed
			l.endTick(now)
			assert.InDelta(t, tc.want, l.capacity, 0.01)
		})
	}
}

// TestLimiter_endTick_capacityOfSlowHandlers: 2 slots × 200 ms whose pair
// of calls finishes together complete 2 calls in one tick and none in
// the next. Read a tick at a time, capacity was 20 at first and 12 on
// the half second's highest; read over busy ticks that hold minSamples
// completions it is 11.4 at first (8 calls in 7 ticks), then 10.7 (16 in
// 15), for their 10 a second.
func TestLimiter_endTick_capacityOfSlowHandlers(t *testing.T) {
	l, _ := newMockLimiter()
	l.starting, l.queued = false, 3 // the queue never empties
	l.firstTick, l.seen = 1000, true
	l.tick = 1000
	var readings []float64
	for i := range 100 {
		l.ticks[l.tick%rateTicks] = tickCounts{n: l.tick, completions: 2 * (1 - i%2), arrivals: 1, least: 3}
		l.endTick(l.tick + 1)
		if l.capacity > 0 {
			readings = append(readings, l.capacity)
		}
	}
	require.NotEmpty(t, readings)
	assert.InDelta(t, 10, slices.Min(readings), 1, "the lowest reading")
	assert.InDelta(t, 10, slices.Max(readings), 1.5, "the highest reading")
	assert.InDelta(t, 10, readings[len(readings)-1], 0.7, "the last reading")
}

func TestLimiter_adjust_followsLatency(t *testing.T) {
	// heavy are latencies of a lognormal spread (p99.9 = 50× the median)
	// whose geometric mean is 1.5 noLoads.
	heavy := make([]time.Duration, 16)
	rng := rand.New(rand.NewPCG(1, 2))
	var sum float64
	for i := range heavy {
		x := math.Log(50) / 3.09 * rng.NormFloat64()
		heavy[i] = time.Duration(math.Exp(x) * float64(30*time.Millisecond))
		sum += x
	}
	shift := math.Exp(sum / float64(len(heavy)))
	for i := range heavy {
		heavy[i] = time.Duration(float64(heavy[i]) / shift)
	}
	same := func(d time.Duration, n int) []time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = d
		}
		return ds
	}
	for _, tc := range []struct {
		name      string
		latencies []time.Duration
		full      bool
		wantMoved int // -1 down, 0 unchanged, 1 up
	}{
		{name: "no queue inside: grows", latencies: same(20*time.Millisecond, minSamples), full: true, wantMoved: 1},
		{name: "latency doubled: shrinks", latencies: same(40*time.Millisecond, minSamples), full: true, wantMoved: -1},
		{name: "latency half as much again: shrinks", latencies: same(30*time.Millisecond, minSamples), full: true, wantMoved: -1},
		{name: "heavy tail, as much above by chance: grows", latencies: heavy, full: true, wantMoved: 1},
		{name: "limit not reached: unchanged", latencies: same(40*time.Millisecond, minSamples), full: false, wantMoved: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, now := newStartedLimiter(20*time.Millisecond, 16)
			for _, d := range tc.latencies {
				l.interval.add(math.Log(float64(d)))
			}
			l.full = tc.full
			before := l.limit
			l.adjust(now)
			switch tc.wantMoved {
			case 1:
				assert.Greater(t, l.limit, before)
			case -1:
				assert.Less(t, l.limit, before)
			default:
				assert.Equal(t, before, l.limit)
			}
		})
	}
}

func TestLimiter_adjust_overloadedStopsAtWhatTheHandlersServe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		overload bool
		unknown  bool // capacity
		latency  time.Duration
		want     float64
	}{
		// 200 calls/s of 20 ms each: 4 at once, and ½√4 more.
		{name: "overloaded, a drained queue: up to 4 + ½√4", overload: true, latency: 20 * time.Millisecond, want: 5},
		{name: "overloaded, latency up: the gradient is lower", overload: true, latency: 30 * time.Millisecond,
			want: 4.75 + 0.5*(4.75*2/3+0.5*math.Sqrt(4.75)-4.75)}, // halfway down
		{name: "not overloaded: the gradient alone", overload: false, latency: 20 * time.Millisecond, want: 4.75 + 0.5*math.Sqrt(4.75)},
		{name: "overloaded, capacity not yet known (Force): the gradient alone", overload: true, unknown: true,
			latency: 20 * time.Millisecond, want: 4.75 + 0.5*math.Sqrt(4.75)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, now := newStartedLimiter(20*time.Millisecond, 4.75)
			l.overload, l.capacity = tc.overload, 200
			if tc.unknown {
				l.capacity = 0
			}
			for range minSamples {
				l.interval.add(math.Log(float64(tc.latency)))
			}
			l.full = true
			l.adjust(now)
			assert.InDelta(t, tc.want, l.limit, 0.01)
		})
	}
}

// TestLimiter_adjust_overloadedProbesHandlersThatSlowed: in overload, 4
// handlers of 20 ms at their limit of 4 + ½√4 take 40 ms from one interval
// to the next (their service slowed). The limit holds where the gradient
// on the old noLoad would take it below the 4 slots, a probe starts at
// once, and its calls, which take 40 ms with no queue to drain, replace
// noLoad. Right after a probe, a slowed interval holds the limit too,
// and probes once slowedProbeGap has passed.
func TestLimiter_adjust_overloadedProbesHandlersThatSlowed(t *testing.T) {
	l, now := newStartedLimiter(20*time.Millisecond, 5)
	l.overload, l.capacity, l.probedAt = true, 200, 4
	l.latency = 25 * time.Millisecond
	interval := func(latency time.Duration) {
		for range minSamples {
			l.interval.add(math.Log(float64(latency)))
		}
		l.full = true
		l.adjust(now)
	}
	now = now.Add(300 * time.Millisecond) // within the second of the last probe
	interval(40 * time.Millisecond)
	assert.Equal(t, 5.0, l.limit, "the limit holds")
	require.True(t, l.probing, "a probe starts at once")
	assert.Equal(t, 4, l.allowed(), "in overload a probe lets in what the handlers serve at once")
	for range minSamples / 2 {
		l.probed.add(math.Log(float64(40 * time.Millisecond)))
	}
	now = now.Add(50 * time.Millisecond)
	l.endProbe(now)
	assert.InDelta(t, float64(40*time.Millisecond), float64(l.noLoad()), 1e3, "the handlers are slower: noLoad follows")

	// The limit of 5 leaves a call queued inside the 4 handlers, now of
	// 40 ms: an interval takes 50, and the probe, which drains that
	// queue, 40: twice noLoad, the handlers slower past doubt.
	l, now = newStartedLimiter(20*time.Millisecond, 5)
	l.overload, l.capacity, l.probedAt = true, 200, 4
	now = now.Add(300 * time.Millisecond)
	interval(50 * time.Millisecond)
	require.True(t, l.probing)
	for range minSamples / 2 {
		l.probed.add(math.Log(float64(40 * time.Millisecond)))
	}
	l.endProbe(now.Add(50 * time.Millisecond))
	assert.InDelta(t, float64(40*time.Millisecond), float64(l.noLoad()), 1e3,
		"a probe that drained the queue inside and still takes twice noLoad: noLoad follows")
	assert.InDelta(t, 100, l.capacity, 1, "and capacity halves: the handlers serve as many at once, each twice as long")

	l, now = newStartedLimiter(20*time.Millisecond, 5)
	l.overload, l.capacity = true, 200
	l.probeEnded = now.Add(-minInterval) // a probe has just ended
	interval(40 * time.Millisecond)
	assert.False(t, l.probing, "no probe right after one")
	assert.Equal(t, 5.0, l.limit, "the limit holds till the next probe, above the handlers' 4 slots")
	now = l.probeEnded.Add(slowedProbeGap)
	interval(40 * time.Millisecond)
	require.True(t, l.probing, "a probe starts once the gap has passed")
	assert.Equal(t, 4, l.allowed(), "and lets in what the handlers serve at once")

	l, now = newStartedLimiter(20*time.Millisecond, 5)
	l.capacity = 200 // not overloaded: the limit may hold a queue inside
	interval(40 * time.Millisecond)
	assert.False(t, l.probing, "not overloaded: no probe before its second")
	assert.Less(t, l.limit, 5.0)
}

// TestLimiter_adjust_overloadedCountsTheMeanOfAHeavyTail: in overload,
// 4 handlers serve 200 calls a second of a heavy tail (lognormal, the
// slowest call in a thousand 50 times the median) whose mean is 20 ms and
// geometric mean 9 ms. By Little's law they serve 200 × 20 ms = 4 calls at
// once: the limit stops there, plus the headroom, not at 200 × 9 ms; a
// service that takes the same time each call keeps its own 4 + ½√4.
func TestLimiter_adjust_overloadedCountsTheMeanOfAHeavyTail(t *testing.T) {
	const n = 64
	heavy := make([]time.Duration, n) // the lognormal's quantiles, median 9 ms
	for i := range heavy {
		z := math.Sqrt2 * math.Erfinv(2*(float64(i)+0.5)/n-1)
		heavy[i] = time.Duration(float64(9*time.Millisecond) * math.Exp(math.Log(50)/3.090232306167813*z))
	}
	for _, tc := range []struct {
		name      string
		latencies []time.Duration
		noLoad    time.Duration
		tail      [2]float64 // the range tail ends in
		limit     float64
	}{
		{name: "heavy tail", latencies: heavy, noLoad: 9 * time.Millisecond, tail: [2]float64{1.9, 2.3}, limit: 4},
		{name: "the same time each call", latencies: []time.Duration{20 * time.Millisecond}, noLoad: 20 * time.Millisecond,
			tail: [2]float64{1, 1.001}, limit: 4 + 0.5*math.Sqrt(4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, now := newStartedLimiter(tc.noLoad, 5)
			l.overload, l.capacity = true, 200
			for range 20 {
				for _, d := range tc.latencies {
					l.interval.add(math.Log(float64(d)))
					l.interval.linear += float64(d)
				}
				l.full, l.probeSec = true, now.Unix() // no probe
				l.adjust(now)
				now = now.Add(minInterval)
			}
			assert.GreaterOrEqual(t, l.tail, tc.tail[0])
			assert.LessOrEqual(t, l.tail, tc.tail[1])
			assert.GreaterOrEqual(t, l.limit, tc.limit-0.01, "no fewer than the handlers serve at once")
			assert.LessOrEqual(t, l.limit, tc.limit+1.1)
		})
	}
}

// TestLimiter_adjust_spreadIntervalTellsNoNoLoad: an interval whose
// latencies are still spread (a heavy tail's, 4 and 36 ms, geometric mean
// 12 ms) leaves noLoad as it was; one that tells its latency to within
// maxSpread is a noLoad.
func TestLimiter_adjust_spreadIntervalTellsNoNoLoad(t *testing.T) {
	l, now := newStartedLimiter(20*time.Millisecond, 5)
	for i := range 16 {
		d := 4 * time.Millisecond
		if i%2 == 1 {
			d = 36 * time.Millisecond
		}
		l.interval.add(math.Log(float64(d)))
	}
	require.Greater(t, l.interval.spread(), float64(maxSpread))
	l.adjust(now)
	assert.Equal(t, 20*time.Millisecond, l.noLoad(), "spread: no noLoad")

	for range 16 {
		l.interval.add(math.Log(float64(12 * time.Millisecond)))
	}
	l.adjust(now)
	assert.Equal(t, 12*time.Millisecond, l.noLoad(), "told to within maxSpread")
}

// TestLimiter_adjust_aRoughNoLoadWidensTheSlack: the start's first
// interval, a few calls of a heavy tail, tells a rough noLoad, perhaps
// well below the handlers' own; past the start, a latency counts as above
// it only past what the spread of both readings explains, so that the
// limit does not fall below the handlers' slots on a low draw.
func TestLimiter_adjust_aRoughNoLoadWidensTheSlack(t *testing.T) {
	ms := float64(time.Millisecond)
	for _, tc := range []struct {
		name  string
		first []float64 // the first interval's latencies, in ms
		falls bool      // the limit, after an interval of 16 calls 1.6× noLoad
	}{
		{name: "told roughly: the limit holds", first: []float64{2, 4, 6, 8, 10, 12, 30, 40}, falls: false},
		{name: "told to within a tenth: the limit falls", first: []float64{9, 10, 9, 10, 9, 10, 9, 10}, falls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, mock := newMockLimiter()
			for _, d := range tc.first {
				l.interval.add(math.Log(d * ms))
			}
			l.adjust(mock.Now())
			mock.Add(minInterval)
			l.limit, l.starting, l.probeSec = 8, false, mock.Now().Unix()
			noLoad := float64(l.noLoad())
			for i := range 16 {
				l.interval.add(math.Log(1.6 * noLoad * (1 + 0.1*float64(i%2))))
			}
			l.full = true
			l.adjust(mock.Now())
			assert.Equal(t, tc.falls, l.limit < 8, "limit %.1f", l.limit)
		})
	}
}

func TestLimiter_adjust_startsByDoubling(t *testing.T) {
	l, mock := newMockLimiter()
	assert.Equal(t, float64(initialLimit), l.Stats().Limit)
	full := func(latency time.Duration) {
		l.probeSec = mock.Now().Unix() // no probe
		for range minSamples {
			l.interval.add(math.Log(float64(latency)))
		}
		l.full = true
		l.adjust(mock.Now())
		mock.Add(minInterval)
	}
	for _, want := range []float64{2 * initialLimit, 4 * initialLimit} {
		full(20 * time.Millisecond)
		assert.Equal(t, want, l.limit, "no queue inside: the limit doubles")
		assert.Equal(t, maxQueue, l.queueCap(0), "the queue is not bounded by a wait while the limit starts")
	}
	full(24 * time.Millisecond) // a fifth above noLoad: not yet the end of the start
	const top = 8 * initialLimit
	assert.Equal(t, float64(top), l.limit)
	full(40 * time.Millisecond) // top calls at once are twice what the handlers serve
	assert.False(t, l.starting)
	assert.InDelta(t, 0.75*top+0.25*math.Sqrt(top), l.limit, 0.01, "halfway down to top × ½ + ½√top")
	assert.True(t, l.probing, "the start ends with a probe")
	assert.Equal(t, max(2, int(l.limit/deepProbe+0.5)), l.allowed(), "a quarter of the limit deep, 2 calls at least")
	l.probing, l.deep = false, false
	before := l.limit
	full(20 * time.Millisecond)
	assert.InDelta(t, before+0.5*math.Sqrt(before), l.limit, 0.01, "past the start, it grows by ½√limit")
}

// TestLimiter_adjust_theStartEndsOnAQueueInside: an interval of the
// start whose latency is past noLoad ends it though the limit was not
// reached, its calls queued inside the handlers; one within noLoad, the
// limit not reached, leaves the limit and the start as they were.
func TestLimiter_adjust_theStartEndsOnAQueueInside(t *testing.T) {
	l, mock := newMockLimiter()
	interval := func(latency time.Duration) {
		for range minSamples {
			l.interval.add(math.Log(float64(latency)))
		}
		l.full = false // the limit not reached
		l.adjust(mock.Now())
		mock.Add(minInterval)
	}
	l.limit = 16
	interval(200 * time.Millisecond)
	assert.True(t, l.starting)
	assert.Equal(t, 16.0, l.limit, "not reached: no doubling")
	interval(650 * time.Millisecond) // 16 calls at once in 2 slots of 200 ms
	assert.False(t, l.starting, "the queue inside ends the start")
	assert.True(t, l.probing && l.deep, "with the first probe")
	assert.Less(t, l.limit, 16.0)
}

// TestLimiter_adjust_theStartsEndTellsCapacity: the interval that ends
// the start with the queue never empty, or grown past chance, had every
// handler busy, and what they served in it is capacity, known at once;
// with the queue empty at some point and no more calls arriving than
// finished (but for chance), they may have idled, and with a heavy tail's
// latencies a few slow calls held them: capacity then waits for busy
// ticks.
func TestLimiter_adjust_theStartsEndTellsCapacity(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		latencies []time.Duration // the interval's, minSamples of them
		emptied   bool
		arrived   int // in the interval; 20 calls finished in it
		want      float64
	}{
		{name: "a queue inside", latencies: []time.Duration{40 * ms}, want: 200},
		{name: "the queue emptied", latencies: []time.Duration{40 * ms}, emptied: true, arrived: 20},
		{name: "the queue emptied, then grew within chance", latencies: []time.Duration{40 * ms}, emptied: true, arrived: 28},
		{name: "the queue emptied, then grew past chance", latencies: []time.Duration{40 * ms}, emptied: true, arrived: 29, want: 200},
		{name: "a heavy tail", latencies: []time.Duration{80 * ms, 80 * ms, 80 * ms, 400 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, mock := newMockLimiter()
			l.limit = 4
			l.noteNoLoad(mock.Now(), 20*ms, 0)
			slots := fill(t, l, 4)
			ctx, cancel := context.WithCancel(context.Background())
			waiting := make([]<-chan acquired, 6)
			for i := range waiting {
				waiting[i] = acquireAsync(t, l, ctx, criticality.Default)
			}
			l.mu.Lock()
			l.newInterval(mock.Now())
			l.intervalEmptied = tc.emptied
			l.mu.Unlock()
			mock.Add(minInterval)
			for _, s := range slots {
				s.Release(false) // hands the slot to a call waiting: the queue holds 2
			}
			l.mu.Lock()
			l.intervalDone, l.intervalArrived = 20, tc.arrived // in 100 ms
			for i := range minSamples {
				d := tc.latencies[i%len(tc.latencies)]
				l.interval.add(math.Log(float64(d)))
				l.interval.linear += float64(d)
			}
			l.full = true
			l.adjust(mock.Now())
			starting, capacity := l.starting, l.capacity
			l.mu.Unlock()
			assert.False(t, starting, "latency past noLoad ends the start")
			assert.InDelta(t, tc.want, capacity, 1e-9)
			cancel()
			for _, ch := range waiting {
				(<-ch).slot.Release(false)
			}
		})
	}
}

// TestLimiter_adjust_theStartProbesNothing: while the limit starts, no
// probe interrupts it, whatever second it is: a probe of handlers that
// take 200 ms would hold the start back most of a second.
func TestLimiter_adjust_theStartProbesNothing(t *testing.T) {
	l, mock := newMockLimiter()
	mock.Add(3 * time.Second) // seconds past the last probe (none yet)
	for range minSamples {
		l.interval.add(math.Log(float64(200 * time.Millisecond)))
	}
	l.full = true
	l.adjust(mock.Now())
	assert.True(t, l.starting)
	assert.False(t, l.probing, "no probe in the start")
	assert.Equal(t, 2.0*initialLimit, l.limit, "the limit doubles at once")
}

// TestLimiter_advance_theFirstProbeWaitsForNoLoad: the first probe past
// the start does not end on two calls that tell no noLoad, as the
// spread of the start's calls (a queue's) says, but once its calls tell
// it; missed, the start's noLoad, read with 4 calls at once in 2 slots,
// would stay.
func TestLimiter_advance_theFirstProbeWaitsForNoLoad(t *testing.T) {
	l, mock := newMockLimiter()
	l.noteNoLoad(mock.Now(), 320*time.Millisecond, 0)
	l.limit, l.starting, l.perCall = 8, false, 0.15 // a quarter of 8 at once
	l.probing, l.deep, l.probeStart = true, true, mock.Now()
	release := func(n int) {
		slots := fill(t, l, n)
		mock.Add(200 * time.Millisecond)
		for _, s := range slots {
			s.Release(true)
		}
	}
	release(2)
	mock.Add(time.Second) // past two noLoads
	l.Stats()
	require.Greater(t, l.probeSpread(), maxSpread)
	assert.True(t, l.probing, "two calls tell no noLoad at this spread: the probe goes on")
	release(2)
	l.Stats()
	assert.False(t, l.probing, "four do")
	assert.InDelta(t, float64(200*time.Millisecond), float64(l.noLoad()), 1e3)
}

// A standing queue turns its excess away as it is held to do, which is no
// loss: losses start an overload, whose short queue, served newest first,
// serves less of arrivals a little past capacity; Stats says the queue is
// held. A full queue that does not stand loses the call it turns away.
func TestLimiter_Acquire_aStandingQueuesExcessIsNoLoss(t *testing.T) {
	for _, stands := range []bool{false, true} {
		l, _ := newStartedLimiter(20*time.Millisecond, 1)
		held, err := l.Acquire(context.Background(), criticality.Critical)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		l.mu.Lock()
		l.capacity, l.stands = 200, stands // the clock stands still: no tick ends
		full := l.queueCap(0)
		l.mu.Unlock()
		done := make(chan struct{}, full)
		for range full {
			go func() {
				_, _ = l.Acquire(ctx, criticality.Sheddable)
				done <- struct{}{}
			}()
		}
		require.Eventually(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.queued == full }, time.Minute, time.Millisecond)
		_, err = l.Acquire(context.Background(), criticality.Sheddable)
		require.ErrorIs(t, err, ErrOverloaded)
		l.mu.Lock()
		lost := l.ticks[l.tick%rateTicks].lost
		l.mu.Unlock()
		st := l.Stats()
		assert.Equal(t, stands, st.QueueHeld, "Stats tells a held queue")
		assert.False(t, st.Overloaded)
		if stands {
			assert.Equal(t, 20, full, "5 noLoads of 20 ms at 200 calls a second")
			assert.Equal(t, 0, lost, "turned away by a standing queue")
		} else {
			assert.Equal(t, 50, full, "a second of expected wait")
			assert.Equal(t, 1, lost, "turned away by a full queue")
		}
		cancel()
		for range full {
			<-done
		}
		held.Release(true)
	}
}

// TestLimiter_queueCap_theFirstProbeDrainsWhatItLetsIn: during the first
// probe past the start, the queue holds what the calls the probe lets in
// serve in maxWait, not the start's limit: a queue sized on the limit
// outlives its callers' deadlines.
func TestLimiter_queueCap_theFirstProbeDrainsWhatItLetsIn(t *testing.T) {
	l, _ := newStartedLimiter(200*time.Millisecond, 8)
	assert.Equal(t, 40, l.queueCap(0), "8 calls every 200 ms, for a second")
	l.probing, l.deep = true, true
	assert.Equal(t, 2, l.allowed())
	assert.Equal(t, 10, l.queueCap(0), "the probe's 2 calls every 200 ms")
	l.deep = false
	assert.Equal(t, 40, l.queueCap(0), "a later probe is short: the limit's")
}

// TestLimiter_endProbe_aHeavyTailsFastestCallsTellNoNoLoad: a probe ends
// on the first of its calls to finish, the fastest of a heavy tail's,
// whose own spread is small; the spread of the intervals' calls says
// they tell no noLoad, so that it stays.
func TestLimiter_endProbe_aHeavyTailsFastestCallsTellNoNoLoad(t *testing.T) {
	l, now := newStartedLimiter(9*time.Millisecond, 8)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 { // a lognormal whose slowest call in a thousand is 50× the median
		l.interval.add(math.Log(float64(9*time.Millisecond)) + 1.27*rng.NormFloat64())
	}
	l.adjust(now)
	require.Greater(t, l.perCall, 0.25, "a tail's calls spread, as the intervals tell")
	noLoad := l.noLoad()
	l.latency = 15 * time.Millisecond
	for _, d := range []time.Duration{3, 3, 3, 3} {
		l.probed.add(math.Log(float64(d * time.Millisecond)))
	}
	l.probing = true
	l.endProbe(now)
	assert.Equal(t, noLoad, l.noLoad(), "four calls of a heavy tail tell no noLoad")
}

// Handlers that take the same time each call spread the intervals' calls
// as they queue inside, past the limit: a probe drains that queue, and
// its few calls, agreeing with noLoad, tell it again, so that it does not
// age out for the intervals' latencies, a queue's.
func TestLimiter_endProbe_aQueueInsideKeepsNoLoad(t *testing.T) {
	l, now := newStartedLimiter(20*time.Millisecond, 8)
	rng := rand.New(rand.NewPCG(1, 2))
	for sec := range 6 {
		at := now.Add(time.Duration(sec) * time.Second)
		for range 8 {
			for range 20 { // 20 ms each, behind 0 to 5 calls of 4 handlers inside
				d := 20*time.Millisecond + time.Duration(rng.IntN(6))*5*time.Millisecond
				l.interval.add(math.Log(float64(d)))
				l.interval.linear += float64(d)
			}
			l.adjust(at)
		}
		require.Greater(t, l.perCall/math.Sqrt(4), maxSpread, "the queue inside spreads the intervals' calls past what 4 tell")
		l.probed = logLatencies{}
		for _, d := range []time.Duration{20, 20, 21, 20} {
			l.probed.add(math.Log(float64(d * time.Millisecond)))
		}
		l.probing, l.deep = true, false
		l.endProbe(at)
	}
	assert.InDelta(t, float64(20*time.Millisecond), float64(l.noLoad()), float64(time.Millisecond),
		"probes that found the queue drained keep noLoad")
}

func TestLimiter_endProbe_followsSlowerHandlers(t *testing.T) {
	l, mock := newMockLimiter()
	l.limit, l.starting = 6, false
	now := mock.Now()
	probe := func(latency time.Duration) {
		for range minSamples / 2 {
			l.probed.add(math.Log(float64(latency)))
		}
		l.probing = true
		l.endProbe(now)
	}
	l.noteNoLoad(now, 20*time.Millisecond, 0)
	l.latency = 26 * time.Millisecond // the interval before: a little queue inside
	probe(20 * time.Millisecond)
	assert.InDelta(t, float64(20*time.Millisecond), float64(l.noLoad()), 1e3, "the probe drained the queue inside: noLoad stays")

	l.latency = 80 * time.Millisecond // more calls let in than the last probe did
	l.limit = 12
	probe(60 * time.Millisecond)
	assert.InDelta(t, float64(20*time.Millisecond), float64(l.noLoad()), 1e3, "more calls in flight may queue inside: noLoad stays")

	l.limit = 6
	l.latency = 40 * time.Millisecond // the service has slowed to twice as long
	probe(40 * time.Millisecond)
	assert.InDelta(t, float64(40*time.Millisecond), float64(l.noLoad()), 1e3, "the probe drained nothing: the handlers are slower, and noLoad follows at once")

	l.latency = 81 * time.Millisecond // slower again; the probe a hair faster, by chance
	probe(80 * time.Millisecond)
	assert.InDelta(t, float64(80*time.Millisecond), float64(l.noLoad()), 1e3, "a probe within noise of the interval drained nothing either")

	l.latency = 92 * time.Millisecond
	probe(80 * time.Millisecond)
	l.latency = 90 * time.Millisecond // a probe a tenth faster than the interval drained a queue
	probe(81 * time.Millisecond)
	assert.InDelta(t, float64(80*time.Millisecond), float64(l.noLoad()), 1e3, "noLoad stays the lowest")
}

// TestLimiter_endProbe_pastTheStartFindsFewSlots: handlers of 2 slots of
// 200 ms, whose start read 4 calls at once (400 ms, a queue's latency) as
// noLoad: the probe that ends the start lets in 2 calls, and their 200 ms
// is noLoad; in overload, capacity × noLoad is then 2, where 4 held the
// queue inside.
func TestLimiter_endProbe_pastTheStartFindsFewSlots(t *testing.T) {
	l, mock := newMockLimiter()
	l.noteNoLoad(mock.Now(), 400*time.Millisecond, 0)
	l.limit = 8
	for range minSamples {
		l.interval.add(math.Log(float64(800 * time.Millisecond))) // 8 at once
	}
	l.full = true
	mock.Add(time.Second)
	l.adjust(mock.Now())
	require.False(t, l.starting)
	require.True(t, l.probing)
	assert.Equal(t, 2, l.allowed(), "a quarter of the limit")
	mock.Add(time.Second) // past the second a probe lasts: the start's calls drain first
	l.Stats()
	require.True(t, l.probing, "no call of the probe has finished yet")
	slots := fill(t, l, 2)
	mock.Add(200 * time.Millisecond)
	for _, s := range slots {
		s.Release(true)
	}
	mock.Add(time.Second) // past two noLoads
	l.Stats()
	assert.False(t, l.probing)
	assert.InDelta(t, float64(200*time.Millisecond), float64(l.noLoad()), 1e3,
		"noLoad is the two slots' own")
	// The start's last interval (8 calls at once, 800 ms) with the new
	// noLoad: the limit moves at once, not halfway at a time.
	started := 8 + 0.5*(8*0.5+0.5*math.Sqrt(8)-8)
	assert.InDelta(t, started*0.25+0.5*math.Sqrt(started), l.limit, 0.01)
	l.capacity = 10 // calls a second
	assert.InDelta(t, 2, l.atOnce(), 0.01)
}

func TestLimiter_allowed_probe(t *testing.T) {
	l, mock := newMockLimiter()
	l.noteNoLoad(mock.Now(), 20*time.Millisecond, 0)
	l.limit, l.starting, l.capacity = 5, false, 200 // 4 at once, and ½√4 more
	assert.Equal(t, 5, l.allowed())
	l.probing = true
	assert.Equal(t, 3, l.allowed(), "a probe lets in √limit fewer")
	l.overload = true
	assert.Equal(t, 4, l.allowed(), "overloaded, what the handlers serve at once: their queue drains, and none is idle")
	l.capacity = 250
	assert.Equal(t, 3, l.allowed(), "what they serve at once no fewer than the limit: noLoad is too high, and the probe √limit deep")

	l.minima = [maxNoLoadSeconds]time.Duration{} // 2 slots of 200 ms, 10 calls a second
	l.noteNoLoad(mock.Now(), 200*time.Millisecond, 0)
	l.limit, l.capacity = 2+0.5*math.Sqrt(2), 10
	assert.Equal(t, 2, l.allowed(), "2 at once, one fewer than the limit lets in: neither slot idle")
}

func TestLimiter_advance_probeWaitsForTwoCalls(t *testing.T) {
	l, mock := newMockLimiter()
	l.limit, l.starting = 3, false
	l.noteNoLoad(mock.Now(), 200*time.Millisecond, 0)
	l.probing, l.probeStart = true, mock.Now()
	s := fill(t, l, 1) // the probe lets one call in at a time
	mock.Add(200 * time.Millisecond)
	s[0].Release(true)
	mock.Add(time.Second / 2) // past two noLoads, with one call
	l.Stats()
	assert.True(t, l.probing, "one call tells no spread: the probe goes on")
	s = fill(t, l, 1)
	mock.Add(200 * time.Millisecond)
	s[0].Release(true)
	l.Stats()
	assert.False(t, l.probing, "two calls, past two noLoads: the probe ends")
	assert.InDelta(t, float64(200*time.Millisecond), float64(l.noLoad()), 1e3, "and tells noLoad")
}

func TestLimiter_adjust_probesSlowHandlersLessOften(t *testing.T) {
	for _, tc := range []struct {
		noLoad time.Duration
		every  int64
	}{
		{20 * time.Millisecond, 1},
		{200 * time.Millisecond, 2},
		{450 * time.Millisecond, 4},
		{10 * time.Second, maxNoLoadSeconds / noLoadProbes},
	} {
		t.Run(tc.noLoad.String(), func(t *testing.T) {
			l, mock := newMockLimiter()
			l.limit, l.starting = 3, false
			for range minSamples / 2 {
				l.probed.add(math.Log(float64(tc.noLoad)))
			}
			l.probing = true
			l.endProbe(mock.Now())
			require.Equal(t, tc.every, l.probeEvery)
			assert.Equal(t, noLoadProbes*tc.every, l.memory(), "noLoad remembers as many probes")
			l.probeSec = mock.Now().Unix()
			for sec := int64(1); sec <= tc.every; sec++ {
				mock.Add(time.Second)
				for range minSamples {
					l.interval.add(math.Log(float64(2 * tc.noLoad)))
				}
				l.full = true
				l.adjust(mock.Now())
				assert.Equal(t, sec == tc.every, l.probing, "%d s after the last probe", sec)
			}
			assert.InDelta(t, float64(tc.noLoad), float64(l.noLoad()), 1e3, "noLoad is remembered till the next probe")
		})
	}
}

func TestLimiter_advance_doublesWhenNothingFinishes(t *testing.T) {
	l, mock := newMockLimiter()
	fill(t, l, initialLimit)
	waiting := acquireAsync(t, l, context.Background(), criticality.Default)
	mock.Add(stallTime + time.Millisecond)
	st := l.Stats() // reads the clock: the stall doubles the limit, and the call goes in
	assert.Equal(t, float64(2*initialLimit), st.Limit)
	require.NoError(t, (<-waiting).err)
}

func TestLimiter_wake_doublesWhenNothingElseHappens(t *testing.T) {
	l, mock := newMockLimiter()
	fill(t, l, initialLimit) // long polls, say
	waiting := acquireAsync(t, l, context.Background(), criticality.Default)
	mock.Add(stallTime / 2)
	assert.Empty(t, waiting, "it waits for a slot")
	mock.Add(stallTime/2 + 2*time.Millisecond) // no call arrives or finishes: the timer wakes the limiter
	require.NoError(t, (<-waiting).err)
	assert.Equal(t, float64(2*initialLimit), l.Stats().Limit)
}

func TestLimiter_hotPathAllocatesNothing(t *testing.T) {
	l := NewLimiter(nil)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		s, _ := l.Acquire(ctx, criticality.Critical)
		s.Release(true)
	})
	assert.Equal(t, 0.0, allocs)
	l, _ = newMockLimiter() // time stands still: the queue's calls do not expire
	l.Force(16, false)
	fill(t, l, 16)
	l.Force(16, true)
	waiters, cancel := context.WithCancel(ctx)
	defer cancel()
	for range 8 { // fill the queue of the lowest level
		go func() { _, _ = l.Acquire(waiters, criticality.Sheddable) }()
	}
	for l.Stats().Queued < 4 {
		runtime.Gosched()
	}
	allocs = testing.AllocsPerRun(1000, func() {
		_, _ = l.Acquire(ctx, criticality.Sheddable) // rejected at once
	})
	assert.Equal(t, 0.0, allocs)
}

func BenchmarkLimiter_AcquireRelease(b *testing.B) {
	l := NewLimiter(nil)
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		s, _ := l.Acquire(ctx, criticality.Critical)
		s.Release(true)
	}
}

// BenchmarkLimiter_AcquireRelease_parallel is a call let in and out on
// every CPU at once, the handlers holding few: the limit's lock, or its
// fast path's counters, shared between them.
func BenchmarkLimiter_AcquireRelease_parallel(b *testing.B) {
	l := NewLimiter(nil)
	l.Force(1_000, false)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			s, _ := l.Acquire(ctx, criticality.Critical)
			s.Release(true)
		}
	})
}

// newOverloadedLimiter returns a Limiter overloaded with its limit of 4
// calls in the handlers and a noLoad of 20 ms, and its clock.
func newOverloadedLimiter(t *testing.T) (*Limiter, *clock.Mock) {
	t.Helper()
	l, mock := newMockLimiter()
	l.Force(4, false)
	fill(t, l, 4)
	l.Force(4, true)
	l.mu.Lock()
	l.minimaSec = mock.Now().Unix()
	l.minima[l.minimaSec%maxNoLoadSeconds] = 20 * time.Millisecond // noLoad
	l.mu.Unlock()
	return l, mock
}

// newReservingLimiter returns a Limiter overloaded with its limit of 5
// calls in the handlers, of which they serve 4 at once (200 calls a
// second of 20 ms), 4 held by calls of level, which arrived just now.
func newReservingLimiter(t *testing.T, level criticality.Level) (*Limiter, []Slot) {
	t.Helper()
	l, mock := newMockLimiter()
	l.Force(5, false)
	slots := make([]Slot, 4)
	for i := range slots {
		s, err := l.Acquire(context.Background(), level)
		require.NoError(t, err)
		slots[i] = s
	}
	l.Force(5, true)
	l.mu.Lock()
	l.minimaSec = mock.Now().Unix()
	l.minima[l.minimaSec%maxNoLoadSeconds] = 20 * time.Millisecond // noLoad
	l.capacity = 200
	l.mu.Unlock()
	return l, slots
}

// TestLimiter_allowedFor_headroomIsTheHigherLevels: in overload, a call
// below CRITICAL fills the slots up to what the handlers serve at once
// while higher levels arrive, and the limit's headroom goes to them: a
// SHEDDABLE call waits where a CRITICAL one arriving after it goes in,
// and goes in itself as a slot frees below what the handlers serve.
// Without higher levels arriving, or with handlers that serve few calls
// at once, it takes the headroom as any call.
func TestLimiter_allowedFor_headroomIsTheHigherLevels(t *testing.T) {
	ctx := context.Background()
	l, slots := newReservingLimiter(t, criticality.Critical)
	shed := acquireAsync(t, l, ctx, criticality.Sheddable)
	st := l.Stats()
	assert.Equal(t, 1, st.Queued, "SHEDDABLE waits: 4 in, what the handlers serve at once")
	assert.Equal(t, 4, st.InFlight)

	var critical Slot
	select {
	case got := <-acquireAsync(t, l, ctx, criticality.Critical):
		require.NoError(t, got.err)
		critical = got.slot
	default:
		t.Fatal("CRITICAL waits behind SHEDDABLE: it goes in at once, to the headroom")
	}
	assert.Equal(t, 5, l.Stats().InFlight)

	slots[0].Release(true)
	assert.Empty(t, shed, "4 in: the headroom is CRITICAL's still")
	assert.Equal(t, 1, l.Stats().Queued)
	critical.Release(true)
	got := <-shed
	require.NoError(t, got.err, "a slot frees below what the handlers serve: SHEDDABLE goes in")
	assert.Equal(t, 4, l.Stats().InFlight)
	got.slot.Release(true)
	for _, s := range slots[1:] {
		s.Release(true)
	}

	t.Run("no higher level arriving", func(t *testing.T) {
		l, slots := newReservingLimiter(t, criticality.Sheddable)
		s, err := l.Acquire(ctx, criticality.Sheddable)
		require.NoError(t, err, "only SHEDDABLE arrives: it takes the headroom")
		assert.Equal(t, 5, l.Stats().InFlight)
		s.Release(true)
		for _, s := range slots {
			s.Release(true)
		}
	})
	t.Run("handlers that serve few at once", func(t *testing.T) {
		l, slots := newReservingLimiter(t, criticality.Critical)
		l.mu.Lock()
		l.capacity = 100 // 2 calls at once
		l.mu.Unlock()
		s, err := l.Acquire(ctx, criticality.Sheddable)
		require.NoError(t, err, "below minReserving, no headroom is kept")
		s.Release(true)
		for _, s := range slots {
			s.Release(true)
		}
	})
}

func TestLimiter_expire_overloadedRejectsLongWaitsButTheHighestLevel(t *testing.T) {
	l, mock := newOverloadedLimiter(t)
	critical := acquireAsync(t, l, context.Background(), criticality.Critical)
	highest := acquireAsync(t, l, context.Background(), criticality.CriticalPlus)
	mock.Add(13 * time.Millisecond) // past 0.3 × 20 ms × 2 for CRITICAL
	l.Stats()                       // reads the clock
	assert.ErrorIs(t, (<-critical).err, ErrOverloaded, "a CRITICAL call waited too long")
	mock.Add(500 * time.Millisecond) // within stallTime
	l.Stats()
	assert.Empty(t, highest, "no wait rejects CRITICAL_PLUS")
	assert.Equal(t, [4]int64{0, 1, 0, 0}, l.Stats().Rejected)
}

// TestLimiter_expire_leavesTheOnlyCallWaiting: in overload, a wait
// rejects no call that waits alone: a slot that frees before another
// arrives would idle without it. Once another waits, it goes in first,
// and the wait rejects the old one.
func TestLimiter_expire_leavesTheOnlyCallWaiting(t *testing.T) {
	l, mock := newOverloadedLimiter(t)
	alone := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	mock.Add(7 * time.Millisecond) // past 0.3 × 20 ms
	st := l.Stats()                // reads the clock
	assert.Equal(t, 1, st.Queued, "the only call waiting stays")
	assert.Zero(t, st.Rejected)
	newer := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	assert.ErrorIs(t, (<-alone).err, ErrOverloaded, "another waits: the old one's wait rejects it")
	st = l.Stats()
	assert.Equal(t, 1, st.Queued, "the newer call waits")
	assert.Equal(t, [4]int64{0, 0, 0, 1}, st.Rejected)
	assert.Empty(t, newer)
}

// TestLimiter_noLoad_theStartRemembersItsLowest: during the start noLoad
// is the lowest latency of the last maxNoLoadSeconds, which a queue
// growing inside the handlers cannot carry up; past it, of the last
// noLoadProbes probes' seconds.
func TestLimiter_noLoad_theStartRemembersItsLowest(t *testing.T) {
	l, mock := newMockLimiter()
	require.True(t, l.starting)
	l.noteNoLoad(mock.Now(), 200*time.Millisecond, 0)
	for range 10 {
		mock.Add(time.Second)
		l.noteNoLoad(mock.Now(), 600*time.Millisecond, 0)
	}
	assert.Equal(t, 200*time.Millisecond, l.noLoad(), "starting")
	l.starting = false
	assert.Equal(t, 600*time.Millisecond, l.noLoad(), "started")
}

// TestWaitStretch: in overload a call waits overloadWait times capacity
// over the excess of arrivals, from 1 to maxStretch times.
func TestWaitStretch(t *testing.T) {
	for _, tc := range []struct {
		arrivals, capacity, want float64
	}{
		{arrivals: 800, capacity: 200, want: 1},
		{arrivals: 400, capacity: 200, want: 1},
		{arrivals: 300, capacity: 200, want: 2},
		{arrivals: 250, capacity: 200, want: 3},
		{arrivals: 210, capacity: 200, want: maxStretch},
		{arrivals: 150, capacity: 200, want: maxStretch},
		{arrivals: 30, capacity: 20, want: 2},
	} {
		assert.InDelta(t, tc.want, waitStretch(tc.arrivals, tc.capacity), 1e-9, "%v against %v", tc.arrivals, tc.capacity)
	}
}

// TestLimiter_endTick_overloadStretchesTheWait: an overload judged at
// 1.5× capacity over the short window lets a call wait twice
// overloadWait; at 4×, overloadWait.
func TestLimiter_endTick_overloadStretchesTheWait(t *testing.T) {
	for _, tc := range []struct {
		perTick int
		want    float64
	}{{perTick: 30, want: 2}, {perTick: 80, want: 1}} {
		l, _ := newMockLimiter()
		l.capacity, l.overload = 200, true
		const now = 1000
		for i := int64(1); i <= rateTicks; i++ {
			l.ticks[(now-i)%rateTicks] = tickCounts{n: now - i, arrivals: tc.perTick}
		}
		l.tick = now - 1
		l.endTick(now)
		require.True(t, l.overload)
		assert.InDelta(t, tc.want, l.stretch, 1e-9, "%d a tick", tc.perTick)
	}
}

// TestLimiter_expire_stretchedWait: just past capacity, a call older
// than overloadWait waits on while the stretched wait lasts, though a
// newer one waits too.
func TestLimiter_expire_stretchedWait(t *testing.T) {
	l, mock := newOverloadedLimiter(t)
	l.mu.Lock()
	l.stretch = 2
	l.mu.Unlock()
	older := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	mock.Add(7 * time.Millisecond) // past 0.3 × 20 ms, within twice that
	newer := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	st := l.Stats()
	assert.Equal(t, 2, st.Queued, "both wait")
	assert.Zero(t, st.Rejected)
	mock.Add(6 * time.Millisecond) // past 2 × 0.3 × 20 ms for the older
	l.Stats()                      // reads the clock
	assert.ErrorIs(t, (<-older).err, ErrOverloaded)
	assert.Empty(t, newer)
	assert.Equal(t, [4]int64{0, 0, 0, 1}, l.Stats().Rejected)
}

// BenchmarkLimiter_Acquire_rejected is the cost of a call the overload
// limit rejects at once.
func BenchmarkLimiter_Acquire_rejected(b *testing.B) {
	l, _ := newMockLimiter()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.Force(16, false)
	for range 16 {
		_, _ = l.Acquire(ctx, criticality.Default)
	}
	l.Force(16, true)
	for range 8 {
		go func() { _, _ = l.Acquire(ctx, criticality.Sheddable) }()
	}
	for l.Stats().Queued < 4 {
		runtime.Gosched()
	}
	b.ReportAllocs()
	for range b.N {
		_, _ = l.Acquire(ctx, criticality.Sheddable)
	}
}

// callKey is a key of a value a call's context adds to its request's.
type callKey struct{}

// TestLimiter_Leave_givesTheRoomOfARequestOnAGuardedCall: a request whose
// handler waits on a guarded call (chain.Leave) holds no room: the call
// waiting goes in at once; back (Return), the request takes its room again
// past the limit; its latency counts without the time away.
func TestLimiter_Leave_givesTheRoomOfARequestOnAGuardedCall(t *testing.T) {
	l, mock := newMockLimiter()
	l.Force(1, false)
	s := fill(t, l, 1)[0]
	ctx, m := chain.With(context.Background(), criticality.Default)
	s.Hold(m)

	waiter := acquireAsync(t, l, context.Background(), criticality.Default)
	mock.Add(time.Millisecond)
	away := chain.Leave(context.WithValue(ctx, callKey{}, 1)) // a call's context, derived from the request's
	require.Same(t, m, away)
	second := <-waiter
	require.NoError(t, second.err, "the request away on a guarded call gave its room")
	assert.Equal(t, 1, l.Stats().InFlight)

	nested := chain.Leave(ctx) // a second guarded call at once: still away
	mock.Add(50 * time.Millisecond)
	nested.Return()
	assert.Equal(t, 1, l.Stats().InFlight, "one guarded call is still out")
	away.Return()
	assert.Equal(t, 2, l.Stats().InFlight, "back, past the limit: the request was let in")
	mock.Add(time.Millisecond)
	s.Release(true)
	second.slot.Release(true)
	assert.Equal(t, 0, l.Stats().InFlight)
	assert.Equal(t, 2, l.interval.n)
	assert.InDelta(t, math.Log(float64(2*time.Millisecond))+math.Log(float64(51*time.Millisecond)), l.interval.sum, 1e-9,
		"the first request's latency is 2 ms, without its 50 ms away; the second's 51 ms")
}

// TestLimiter_Release_whileAway: a request answered while a guarded call it
// made is still out gives back no more room than it held, and a late Return
// takes none.
func TestLimiter_Release_whileAway(t *testing.T) {
	l, mock := newMockLimiter()
	l.Force(4, false)
	s := fill(t, l, 1)[0]
	ctx, m := chain.With(context.Background(), criticality.Default)
	s.Hold(m)
	away := chain.Leave(ctx)
	assert.Equal(t, 0, l.Stats().InFlight)
	mock.Add(10 * time.Millisecond)
	s.Release(true)
	assert.Equal(t, 0, l.Stats().InFlight)
	away.Return()
	assert.Equal(t, 0, l.Stats().InFlight, "a Return after the request was answered takes no room")
	assert.Nil(t, chain.Leave(context.Background()), "no Mark: nothing to leave")
	(*chain.Mark)(nil).Return() // does nothing
}

// TestLimiter_Release_failureTeachesNoLatency: a call that failed gives its
// room back and counts as a completion, but its latency (a dependency's
// fast error, or a hang until the caller left) is not the server's.
func TestLimiter_Release_failureTeachesNoLatency(t *testing.T) {
	l, mock := newMockLimiter()
	slots := fill(t, l, 2)
	mock.Add(time.Millisecond)
	slots[0].Release(false)
	slots[1].Release(true)
	assert.Equal(t, 0, l.Stats().InFlight)
	assert.Equal(t, 1, l.interval.n, "only the served call's latency counts")
	assert.Equal(t, 2, l.ticks[l.tick%rateTicks].completions)
}
