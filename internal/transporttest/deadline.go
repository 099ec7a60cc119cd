package transporttest

import (
	"context"
	"sync"
	"time"
)

// ManualDeadline is a context whose deadline passes when the test says so
// ([ManualDeadline.Expire]), without waiting for a clock.
type ManualDeadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

// NewManualDeadline returns a ManualDeadline whose deadline has not
// passed.
func NewManualDeadline() *ManualDeadline {
	return &ManualDeadline{Context: context.Background(), done: make(chan struct{})}
}

// Expire makes the deadline pass; calling it again does nothing.
func (c *ManualDeadline) Expire() { c.once.Do(func() { close(c.done) }) }

func (c *ManualDeadline) Done() <-chan struct{}       { return c.done }
func (c *ManualDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *ManualDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
