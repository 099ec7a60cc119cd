package serverside

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// overloadedAt returns a Limiter past its start, overloaded since its
// last tick, whose handlers take 5 ms a call and served capacity calls a
// second at a limit of 10, at now, the end of an interval of 100 ms in
// which they completed that many.
func overloadedAt(capacity float64) (*Limiter, time.Time) {
	l, now := newStartedLimiter(5*time.Millisecond, 10)
	l.overload, l.rising, l.capacity, l.upGap = true, true, capacity, minUpGap
	l.tick = now.UnixNano() / int64(tickLength)
	now = now.Add(200 * time.Millisecond)
	interval(l, now, 100*time.Millisecond, int(capacity/10), 5*time.Millisecond)
	return l, now
}

// interval fills the limiter's interval as one of length d, up to now,
// in which done calls completed, minSamples of them taking latency, the
// limit reached.
func interval(l *Limiter, now time.Time, d time.Duration, done int, latency time.Duration) {
	l.intervalFrom, l.intervalDone = now.Add(-d), done
	for range minSamples {
		l.interval.add(math.Log(float64(latency)))
	}
	l.full = true
}

// TestLimiter_adjust_probesUpInOverload: at an overload's start, after an
// interval the limit was reached in, the limit is raised upGain times
// for maxUpSpan. Handlers that had room serve more calls a second in it,
// past chance: what they serve is then capacity, the latency of the
// interval before is noLoad (its calls queued in no handler), and,
// rising, another probe up follows at once.
func TestLimiter_adjust_probesUpInOverload(t *testing.T) {
	l, now := overloadedAt(2000) // 10 calls at once of 5 ms: the cap is 10 + ½√10
	l.adjust(now)
	require.True(t, l.upProbing, "a probe up starts")
	assert.InDelta(t, 10+0.5*math.Sqrt(10), l.upFrom, 0.01)
	assert.InDelta(t, upGain*l.upFrom, l.limit, 0.01)
	assert.Equal(t, now.Add(maxUpSpan), l.nextAdjust, "for maxUpSpan at most")
	assert.Equal(t, 2000.0, l.upRate)

	// The handlers had room: 1.25 times the calls, each as long.
	now = now.Add(minInterval)
	interval(l, now, minInterval, 250, 5*time.Millisecond)
	require.True(t, l.roomFound(now), "room is found once its count is past chance")
	l.adjust(now)
	assert.Equal(t, 2500.0, l.capacity, "capacity is what the handlers served")
	assert.Equal(t, 5*time.Millisecond, l.noLoad())
	assert.True(t, l.upProbing, "rising: another probe up follows at once")
	assert.True(t, l.rising)
}

// TestLimiter_adjust_aProbeUpWithNoRoomGoesBack: handlers whose slots
// were full serve as many calls a second in a probe up, each waiting
// longer inside: the limit goes back to where it was (the probe's
// latency moves it no lower), no probe up follows at once, and the next
// waits minUpGap, the one after twice as long.
func TestLimiter_adjust_aProbeUpWithNoRoomGoesBack(t *testing.T) {
	l, now := overloadedAt(2000)
	l.adjust(now)
	require.True(t, l.upProbing)
	from := l.upFrom

	now = now.Add(minInterval)
	interval(l, now, minInterval, 205, 6250*time.Microsecond)
	assert.False(t, l.roomFound(now), "2 % more calls: chance")
	now = now.Add(maxUpSpan - minInterval)
	interval(l, now, maxUpSpan, 410, 6250*time.Microsecond)
	l.adjust(now)
	assert.False(t, l.upProbing)
	assert.False(t, l.rising)
	assert.Equal(t, from, l.limit, "back where it was")
	assert.Equal(t, 2000.0, l.capacity)
	assert.Equal(t, now.Add(minUpGap), l.upNext)
	assert.Equal(t, 2*minUpGap, l.upGap)

	now = now.Add(minUpGap / 2)
	interval(l, now, minInterval, 200, 5*time.Millisecond)
	l.probeSec = now.Unix() // no probe down due
	l.adjust(now)
	assert.False(t, l.upProbing, "not before upNext")
	now = now.Add(minUpGap / 2)
	interval(l, now, minInterval, 200, 5*time.Millisecond)
	l.probeSec = now.Unix()
	l.adjust(now)
	assert.True(t, l.upProbing, "at upNext")
}

// TestLimiter_adjust_noProbeUp: no probe up for handlers that complete
// too few calls in maxUpSpan for their count to tell a gain (4 × 20 ms),
// right after a probe (its calls let in fewer), nor outside overload.
func TestLimiter_adjust_noProbeUp(t *testing.T) {
	l, now := overloadedAt(200)
	l.minima[l.minimaSec%maxNoLoadSeconds] = 20 * time.Millisecond
	l.adjust(now)
	assert.False(t, l.upProbing, "200 calls a second")

	l, now = overloadedAt(2000)
	l.probeEnded = l.intervalFrom
	l.adjust(now)
	assert.False(t, l.upProbing, "right after a probe")

	l, now = overloadedAt(2000)
	l.overload = false
	l.adjust(now)
	assert.False(t, l.upProbing, "not overloaded")
}
