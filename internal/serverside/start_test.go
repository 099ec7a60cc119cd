package serverside

import (
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/criticality"
)

// TestLimiter_queueCap_drainsAtWhatTheHandlersServe: not overloaded, the
// queue holds a second of expected wait at the rate the handlers serve
// once capacity is known, not at the limit's calls a noLoad: 4 calls let
// in on 2 handlers × 200 ms finish 10 a second, not 20, and 20 calls
// queued waited 2 s, past their callers. It holds the limit's calls at
// least: a capacity read below a call a second (few calls, each let in
// by the stall rule), or handlers slower than a second, turned every call
// past the limit away.
func TestLimiter_queueCap_drainsAtWhatTheHandlersServe(t *testing.T) {
	l, _ := newStartedLimiter(200*time.Millisecond, 4)
	assert.Equal(t, 20, l.queueCap(0), "capacity unknown: 4 calls a noLoad")
	l.capacity = 10
	assert.Equal(t, 10, l.queueCap(0), "a second of what the handlers serve")
	l.capacity = 100
	assert.Equal(t, 20, l.queueCap(0), "the limit's own rate, when lower")
	l.capacity = 0.5
	assert.Equal(t, 4, l.queueCap(0), "the limit's calls at least")

	l, _ = newStartedLimiter(3*time.Second, 2)
	assert.Equal(t, 2, l.queueCap(0), "handlers slower than maxWait: the limit's calls")
	l.capacity = 0.6
	assert.Equal(t, 2, l.queueCap(0), "and once capacity is known")
	l.capacity, l.stands = 0.01, true
	assert.Equal(t, 1, l.queueCap(0), "a standing queue: one call at least")

	// The first probe past the start lets in a quarter of the limit; its
	// queue drains at those calls. A server whose calls each waited out
	// the stall rule (tests that wait for each call) read a noLoad of
	// 1.4 s, and the queue held 2 calls for the probe's 3 at most.
	l, _ = newStartedLimiter(4*time.Second, 12)
	l.probing, l.deep = true, true
	assert.Equal(t, 3, l.allowed())
	assert.Equal(t, 3, l.queueCap(0), "the probe's calls at least")
}

// join has a call at level join l's queue, and returns its waiter (see
// Limiter.join); it fails the test if the call was let in or rejected.
func join(t *testing.T, l *Limiter, level criticality.Level) *waiter {
	t.Helper()
	_, w, err := l.join(level)
	require.NoError(t, err)
	require.NotNil(t, w, "the call waits")
	return w
}

// letIn reports whether w was handed a slot.
func letIn(w *waiter) bool {
	select {
	case <-w.done:
		return w.state == granted
	default:
		return false
	}
}

// TestLimiter_handOff_aQueueThatTurnedACallAwayServesTheNewestFirst: not
// overloaded, the queue serves the oldest call first, whatever its level;
// once it has turned a call away, full, until it next empties, the
// highest level first and the newest first within it: the oldest would
// wait out their callers (a queue that fills at 1.2–2× the capacity of 2
// handlers × 200 ms holds a second), and the newest are served in time.
func TestLimiter_handOff_aQueueThatTurnedACallAwayServesTheNewestFirst(t *testing.T) {
	l, _ := newStartedLimiter(200*time.Millisecond, 1)
	mock := l.clock.(*clock.Mock)
	l.capacity = 3 // 3 calls queued at most: a second of what the handlers serve
	l.tick = mock.Now().UnixNano() / int64(tickLength)
	slot, _, err := l.join(criticality.Critical)
	require.NoError(t, err)
	oldest := join(t, l, criticality.Sheddable)
	mock.Add(time.Millisecond)
	middle := join(t, l, criticality.Critical)
	mock.Add(time.Millisecond)
	newest := join(t, l, criticality.Sheddable)
	require.Equal(t, 3, l.queueCap(0))
	assert.False(t, l.filled, "not yet full")

	_, _, err = l.join(criticality.Sheddable)
	require.ErrorIs(t, err, ErrOverloaded, "a full queue turns a call away")
	assert.True(t, l.filled)
	slot.Release(true)
	assert.True(t, letIn(middle), "the highest level goes first")
	Slot{l: l, start: mock.Now()}.Release(true)
	assert.True(t, letIn(newest), "then the newest")
	assert.False(t, letIn(oldest))
	Slot{l: l, start: mock.Now()}.Release(true)
	assert.True(t, letIn(oldest))

	// Emptied, the queue serves the oldest first again.
	first := join(t, l, criticality.Sheddable)
	assert.False(t, l.filled, "the queue emptied")
	mock.Add(time.Millisecond)
	second := join(t, l, criticality.CriticalPlus)
	Slot{l: l, start: mock.Now()}.Release(true)
	assert.True(t, letIn(first), "the oldest first, whatever its level")
	assert.False(t, letIn(second))
}

// TestLimiter_newInterval_theStartsIntervalsLastFourNoLoads: during the
// start, an interval lasts 4 noLoads once one is known (minStartInterval
// at least, minInterval at most): handlers of 5 ms double the limit every 20 ms, not every 100,
// and a surge of 0.9× the capacity of 32 handlers × 5 ms queued 1,200
// calls meanwhile, which took 2.5 s to drain. Past the start, an interval
// lasts minInterval at least.
func TestLimiter_newInterval_theStartsIntervalsLastFourNoLoads(t *testing.T) {
	l, mock := newMockLimiter()
	now := mock.Now()
	l.newInterval(now)
	assert.Equal(t, now.Add(minInterval), l.nextAdjust, "no noLoad known yet")
	l.noteNoLoad(now, 5*time.Millisecond, 0)
	l.newInterval(now)
	assert.Equal(t, now.Add(20*time.Millisecond), l.nextAdjust)
	l.minima[now.Unix()%maxNoLoadSeconds] = 200 * time.Microsecond
	l.newInterval(now)
	assert.Equal(t, now.Add(minStartInterval), l.nextAdjust, "handlers of microseconds: minStartInterval")
	l.minima[now.Unix()%maxNoLoadSeconds] = 200 * time.Millisecond
	l.newInterval(now)
	assert.Equal(t, now.Add(minInterval), l.nextAdjust, "slow handlers: minInterval")
	l.minima[now.Unix()%maxNoLoadSeconds] = 5 * time.Millisecond
	l.starting = false
	l.newInterval(now)
	assert.Equal(t, now.Add(minInterval), l.nextAdjust, "past the start")
}

// TestLimiter_adjust_theStartEndsPastTheLargerOfARiseAndItsNoise: the
// start ends on latency a quarter above noLoad, or past twice the spread
// of the interval's calls when that is more; not on both at once: 4 calls
// at once on 2 handlers take 1.5 noLoads on average, with a spread a
// queue's mix of 1 and 2 noLoads gives 8 calls, and the product of the
// two let the limit double to 16.
func TestLimiter_adjust_theStartEndsPastTheLargerOfARiseAndItsNoise(t *testing.T) {
	interval := func(l *Limiter, latencies ...time.Duration) {
		for _, d := range latencies {
			l.interval.add(math.Log(float64(d)))
		}
		l.full = true
		l.adjust(l.clock.Now())
	}
	const s = 200 * time.Millisecond
	for _, tc := range []struct {
		name      string
		latencies []time.Duration
		ends      bool
	}{
		{"no queue inside", []time.Duration{s, s, s, s, s, s, s, s}, false},
		{"a fifth above", []time.Duration{6 * s / 5, 6 * s / 5, 6 * s / 5, 6 * s / 5, 6 * s / 5, 6 * s / 5, 6 * s / 5, 6 * s / 5}, false},
		{"2 handlers, 4 calls", []time.Duration{s, s, 2 * s, 2 * s, s, s, 2 * s, 2 * s}, true},
		{"a heavy tail's noise", []time.Duration{s / 4, s / 2, s, 2 * s, 4 * s, s / 4, s / 2, 2 * s}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newMockLimiter()
			l.noteNoLoad(l.clock.Now(), s, 0)
			interval(l, tc.latencies...)
			assert.Equal(t, !tc.ends, l.starting)
		})
	}
}

// TestLimiter_allowed_theFirstProbeLetsInTwoAtLeast: the first probe past
// the start lets in a quarter of the limit, and 2 calls at least: the
// start's first limit is 2, and one call at a time idled a handler of 2
// for the probe's length, while the queue grew past its callers.
func TestLimiter_allowed_theFirstProbeLetsInTwoAtLeast(t *testing.T) {
	l, _ := newStartedLimiter(200*time.Millisecond, 4)
	l.probing, l.deep = true, true
	assert.Equal(t, 2, l.allowed())
	l.limit = 16
	assert.Equal(t, 4, l.allowed())
}

// TestLimiter_adjust_overloadedARoughNoLoadPullsTheLimitNoLower: in
// overload, what the handlers serve at once caps the limit; when noLoad
// was told only past maxSpread (a heavy tail's few calls, well below the
// handlers' own), the cap stops the limit rising but pulls it no lower:
// pulled down, the handlers idled, the capacity read from them fell, and
// the cap with it, down to one call at a time.
func TestLimiter_adjust_overloadedARoughNoLoadPullsTheLimitNoLower(t *testing.T) {
	for _, rough := range []bool{false, true} {
		l, now := newStartedLimiter(5*time.Millisecond, 6)
		if rough {
			l.minimaSpread[now.Unix()%maxNoLoadSeconds] = 0.4
		}
		// 200 calls a second of 5 ms each: 1 at once, and ½ more.
		l.overload, l.capacity, l.tail = true, 200, 1
		for range minSamples {
			l.interval.add(math.Log(float64(5 * time.Millisecond)))
		}
		l.full = true
		l.adjust(now)
		if rough {
			assert.InDelta(t, 6, l.limit, 0.01, "held: the cap would pull it to 1.5")
		} else {
			assert.InDelta(t, 1.5, l.limit, 0.01, "down to the cap: 1 + ½√1")
		}
	}
}

// TestLimiter_adjust_overloadedCapsAtThePeaksCalls: in overload, the
// calls the handlers serve at once are read with capacity's peak of the
// last seconds, not its latest reading: a reading a third low by chance
// (a heavy tail's) pulled the limit under the handlers' slots, and the
// readings after it lower still.
func TestLimiter_adjust_overloadedCapsAtThePeaksCalls(t *testing.T) {
	l, now := newStartedLimiter(20*time.Millisecond, 6)
	l.overload, l.capacity, l.tail = true, 100, 1
	sec := now.Unix()
	l.peakSec = sec
	l.peaks[sec%peakSeconds] = 200 // 4 calls at once of 20 ms
	l.tick = now.UnixNano() / int64(tickLength)
	for range minSamples {
		l.interval.add(math.Log(float64(20 * time.Millisecond)))
	}
	l.full = true
	l.adjust(now)
	assert.InDelta(t, 5, l.limit, 0.01, "4 + ½√4; capacity alone gives 2 + ½√2")
}
