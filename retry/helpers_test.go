package retry_test

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// start is the instant the tests' clocks are set to.
var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// jumpClock is a mock clock on which a wait passes at once: After moves
// the mock by d and fires. Waits add up, so tests read how long the Policy
// waited from the mock's time.
type jumpClock struct {
	*clock.Mock
	mu    sync.Mutex
	waits []time.Duration
}

func newJumpClock() *jumpClock {
	m := clock.NewMock()
	m.Set(start)
	return &jumpClock{Mock: m}
}

func (c *jumpClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	c.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

func (c *jumpClock) waited() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// deadlineCtx has a deadline on the mock's time axis and is never done:
// the Policy reads the deadline against its clock.
type deadlineCtx struct {
	context.Context
	at time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }

// pushback is an error that says how the server wants the call retried.
type pushback struct {
	d     time.Duration
	retry bool
}

func (p pushback) Error() string                        { return "pushed back" }
func (p pushback) RetryPushback() (time.Duration, bool) { return p.d, p.retry }
