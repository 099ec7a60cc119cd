package retrytest

import (
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// start is the instant virtual time begins at.
var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// virtualClock is the virtual time the breakers and the retry Policy read:
// the scenario sets it to each call's arrival. It stands in for
// benbjohnson/clock's Mock, whose Set pauses a millisecond of real time
// for timers to run: at 200 calls/s over 22 s, times the variants
// measured, those pauses would be most of the test's time, and nothing
// here waits on a timer. A wait (After) passes at once, without moving the
// time: every retry is made at its call's instant, the worst case for the
// dependency, since the breaker has not seen the failure's window move.
type virtualClock struct {
	clock.Clock // nil: breakers read Now alone
	ns          atomic.Int64
}

func newVirtualClock() *virtualClock {
	c := &virtualClock{}
	c.set(start)
	return c
}

func (c *virtualClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }
func (c *virtualClock) Now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *virtualClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

// The scenario: calls at rate, a warm-up of healthy calls, then the
// measured stretch.
const (
	rate    = 200 // calls per second
	warmUp  = 2 * time.Second
	outage  = 20 * time.Second
	healthy = 20 * time.Second
)

// run calls call once per 1/rate of virtual time, from start for warm,
// then for measured, telling it whether the call is in the measured part.
func run(c *virtualClock, warm, measured time.Duration, call func(measuring bool)) {
	step := time.Second / rate
	for at := time.Duration(0); at < warm+measured; at += step {
		c.set(start.Add(at))
		call(at >= warm)
	}
}
