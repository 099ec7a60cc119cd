package criticality_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/proba"
)

func ExampleWith() {
	mock := exampleClock()
	b := breaker.MustNew(breaker.WithName("search"),
		breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	checkout := criticality.With(context.Background(), criticality.CriticalPlus)
	prefetch := criticality.With(context.Background(), criticality.Sheddable)

	// A dependency that serves 60 calls per 100 ms, offered 50 checkouts
	// and 50 prefetches in each.
	var checkoutsDropped, prefetchesDropped int
	for range 30 {
		served := 0
		req := func() error {
			if served++; served > 60 {
				return errors.New("overloaded")
			}
			return nil
		}
		for range 50 {
			if err := b.DoCtx(checkout, req); errors.Is(err, breaker.ErrServiceUnavailable) {
				checkoutsDropped++
			}
			if err := b.DoCtx(prefetch, req); errors.Is(err, breaker.ErrServiceUnavailable) {
				prefetchesDropped++
			}
		}
		mock.Add(100 * time.Millisecond)
	}
	fmt.Println("of 1500 checkouts, dropped:", checkoutsDropped)
	fmt.Println("of 1500 prefetches, dropped:", prefetchesDropped)
	fmt.Println(criticality.From(prefetch))
	// Output:
	// of 1500 checkouts, dropped: 0
	// of 1500 prefetches, dropped: 558
	// SHEDDABLE
}

func exampleClock() *clock.Mock {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return m
}
