package fleet_test

import (
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
	"github.com/srebreaker/srebreaker/proba"
)

// A breaker linked to its fleet: the other processes' buckets, as a store
// such as Redis would return them, make it shed although its own window
// holds too few failures to.
func Example() {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
	member, _ := fleet.Of(b)

	p, _ := b.Allow()
	p.Reject("connection refused") // one failure: too few to shed on
	mock.Add(100 * time.Millisecond)

	// A publisher loop sends member.History() to the store, and feeds the
	// other processes' histories back, merged, once per bucket.
	own := member.History()
	fmt.Printf("own: %d buckets, the live one last; %d failure\n", len(own.Buckets), own.Buckets[0].Failures)
	other := fleet.History{Span: own.Span, Size: own.Size, Newest: own.Newest - 1,
		Buckets: []fleet.Bucket{{Failures: 30}}}
	others, err := fleet.History{}.Merge(other)
	if err != nil {
		fmt.Println(err)
	}
	if err := member.SetOthers(others); err != nil {
		fmt.Println(err)
	}
	s := b.Stats()
	fmt.Printf("drop probability: %.2f\n", s.DropProbability)
	// Output:
	// own: 2 buckets, the live one last; 1 failure
	// drop probability: 0.98
}

// A history travels in a small binary form.
func ExampleHistory_MarshalBinary() {
	h := fleet.History{Span: 100 * time.Millisecond, Size: 20, Newest: 17040672000,
		Buckets: []fleet.Bucket{{Successes: 3, Failures: 1}}}
	data, _ := h.MarshalBinary()
	var back fleet.History
	if err := back.UnmarshalBinary(data); err != nil {
		fmt.Println(err)
	}
	fmt.Println(len(data), "bytes;", back.Buckets[0].Successes, "successes")
	// Output: 17 bytes; 3 successes
}
