// Package admitted runs a call a breaker admitted, for the integrations
// (grpcbreaker, connectbreaker, sqlbreaker), so that a call that neither
// returns nor is recorded still counts, once, as a failure.
package admitted

import (
	"fmt"

	"github.com/srebreaker/srebreaker"
)

// ExitedReason is the failure reason of a call that neither returned nor
// panicked with a value.
const ExitedReason = "call exited without returning (runtime.Goexit, or panic(nil) with GODEBUG panicnil=1)"

// Run runs call, which makes an admitted call and records its outcome on
// p, and records on p, as a failure, a call that neither returns nor is
// recorded: a panic is recorded and goes on from here, with the caller's
// frames on the stack. recover returns nil for runtime.Goexit, which goes
// on, and for panic(nil) under GODEBUG panicnil=1, which it stops: Run
// then returns true, and only then, for its caller to raise panic(nil)
// again.
//
// call does not escape, so a closure passed to Run stays on the stack.
func Run(p srebreaker.Promise, call func()) (nilPanic bool) {
	returned := false
	defer func() {
		if returned {
			return
		}
		v := recover()
		if v == nil {
			p.Reject(ExitedReason)
			nilPanic = true
			return
		}
		p.Reject(fmt.Sprint("panic: ", v))
		panic(v)
	}()
	call()
	returned = true
	return false
}
