package breaker_test

import (
	"fmt"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// A stream (a watch) answers at once, stays open for ten minutes, then
// fails: once it answered, the breaker no longer follows it as a call in
// flight, which would count against the dependency once out for longer
// than WithSlowCall's second, and it counts the failure when it comes.
func Example_answered() {
	mock := exampleClock()
	b := breaker.MustNew(breaker.WithClock(mock), breaker.WithSlowCall(time.Second))

	p, err := b.Allow()
	if err != nil {
		return // dropped: the stream is not opened
	}
	mock.Add(50 * time.Millisecond) // the stream's first message arrives
	if a, ok := p.(interface{ Answered() srebreaker.Promise }); ok {
		p = a.Answered()
	}
	mock.Add(10 * time.Minute)
	s := b.Stats()
	fmt.Println("failures while it was open:", s.TotalFailures)

	p.Reject("rpc error: code = ResourceExhausted")
	s = b.Stats()
	fmt.Println("failures once it ended:", s.TotalFailures, "-", s.Reasons[0].Text)
	// Output:
	// failures while it was open: 0
	// failures once it ended: 1 - rpc error: code = ResourceExhausted
}
