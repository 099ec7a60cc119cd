// Package heldcalls fills a server side's overload limit for tests and
// benchmarks of its rejections: one call held in the handler and one in
// the queue, with no clock and no network.
package heldcalls

import (
	"runtime"
	"sync"
)

// Gate holds the calls of a handler that calls [Gate.Hold] until
// [Gate.Release]. Make one with [New].
type Gate struct {
	entered chan struct{}
	release chan struct{}
	wg      sync.WaitGroup
}

// New returns a Gate that holds calls.
func New() *Gate {
	return &Gate{entered: make(chan struct{}, 2), release: make(chan struct{})}
}

// Hold is what the handler under test runs: it returns once the gate is
// released.
func (g *Gate) Hold() {
	g.entered <- struct{}{}
	<-g.release
}

// Fill makes two calls, each with call on a goroutine of its own, through
// a server side whose handler holds them, and returns once the first is
// in the handler and queued reports that the second waits in the limit's
// queue.
func (g *Gate) Fill(call func(), queued func() bool) {
	g.wg.Add(2)
	go func() { defer g.wg.Done(); call() }()
	<-g.entered
	go func() { defer g.wg.Done(); call() }()
	for !queued() {
		runtime.Gosched() // the second call is on its way to the queue
	}
}

// Release lets the calls held go on, and returns once the calls Fill
// made have returned.
func (g *Gate) Release() {
	close(g.release)
	g.wg.Wait()
}
