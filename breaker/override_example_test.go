package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/proba"
)

func ExampleBreaker_SetOverride() {
	mock := exampleClock()
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	// During an incident, an operator sheds every call for ten minutes.
	err := b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: 10 * time.Minute,
		Reason: "database failover", By: "alice"})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = b.Do(func() error { return nil })
	fmt.Println(errors.Is(err, breaker.ErrServiceUnavailable), errors.Is(err, breaker.ErrForced))
	fmt.Println(err)
	o, _ := b.Override()
	fmt.Println(o.Mode, "by", o.By, "for", o.Remaining(mock.Now()))

	// It ends on its own when its TTL has passed.
	mock.Add(10 * time.Minute)
	fmt.Println(b.Do(func() error { return nil }))
	_, ok := b.Override()
	fmt.Println("override in force:", ok)

	// A TTL is required, and at most a day.
	fmt.Println(b.SetOverride(override.Spec{Mode: override.ShedNone}))
	// Output:
	// true true
	// breaker: service unavailable (breaker "payments", forced open by "alice" until 2024-01-01T00:10:00Z: "database failover")
	// shed_all by alice for 10m0s
	// <nil>
	// override in force: false
	// breaker: invalid override: TTL 0s: must be above 0 and at most 24h0m0s
}
