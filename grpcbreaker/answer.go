package grpcbreaker

import (
	"sync"
	"sync/atomic"

	"github.com/srebreaker/srebreaker"
)

// answered marks the call of p answered, when p is a promise of package
// breaker's breakers (see their Answered method): its outcome is still to
// come, but it is no longer a call that has not come back. It returns the
// promise to record the outcome on: p itself for any other promise (a
// server's probe, a test's), which counts the call when it ends.
func answered(p srebreaker.Promise) srebreaker.Promise {
	if a, ok := p.(interface{ Answered() srebreaker.Promise }); ok {
		return a.Answered()
	}
	return p
}

// streamCall is the record of a stream's call: its promise, marked
// answered once (answer) when the server's answer begins, and taken once
// (take) to record the outcome on when the stream ends. The stream's
// goroutines (the caller's, the one awaiting the header, the context's)
// may call both at once; the breaker is never called under mu.
type streamCall struct {
	mu        sync.Mutex
	p         srebreaker.Promise // guarded by mu; nil once taken
	state     callState          // guarded by mu
	answering chan struct{}      // closed when the answer is marked; guarded by mu
	// settled is set once state has left callOut for good: a message
	// read or sent after the first then costs answer one atomic load.
	settled atomic.Bool
}

// callState is where a streamCall is.
type callState uint8

const (
	callOut       callState = iota // no answer yet
	callAnswering                  // answer is marking it
	callAnswered                   // p is the promise of its outcome
	callTaken                      // its outcome is recorded, or being recorded
)

// answer marks the call answered, unless it was or its outcome is taken.
// When another goroutine is marking it (the header's watch, as a message
// arrives), it waits for that mark: once answer returns, the call is
// marked answered.
func (c *streamCall) answer() {
	if c.settled.Load() {
		return
	}
	c.mu.Lock()
	if c.state == callAnswering {
		wait := c.answering
		c.mu.Unlock()
		<-wait
		return
	}
	if c.state != callOut {
		c.mu.Unlock()
		return
	}
	c.state, c.answering = callAnswering, make(chan struct{})
	p := c.p
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.p, c.state = p, callAnswered
		close(c.answering)
		c.mu.Unlock()
		c.settled.Store(true)
	}()
	p = answered(p)
}

// take returns the promise to record the call's outcome on, the first
// time it is called, and nil after. It waits for an answer being marked.
func (c *streamCall) take() srebreaker.Promise {
	c.mu.Lock()
	for c.state == callAnswering {
		wait := c.answering
		c.mu.Unlock()
		<-wait
		c.mu.Lock()
	}
	p := c.p
	c.p, c.state = nil, callTaken
	c.mu.Unlock()
	c.settled.Store(true)
	return p
}

// Accept and Reject record on the promise take returns, if any: a
// streamCall is the promise guard records a panic on.
func (c *streamCall) Accept() {
	if p := c.take(); p != nil {
		p.Accept()
	}
}

func (c *streamCall) Reject(reason string) {
	if p := c.take(); p != nil {
		p.Reject(reason)
	}
}
