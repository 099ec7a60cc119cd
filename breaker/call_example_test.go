package breaker_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

func ExampleCall() {
	b := breaker.MustNew(breaker.WithName("prices"), breaker.WithClock(exampleClock()))
	getPrice := func(ctx context.Context, sku string) (int, error) { return 1299, nil } // the dependency

	price, err := breaker.Call(context.Background(), b, func(ctx context.Context) (int, error) {
		return getPrice(ctx, "sku-1")
	})
	fmt.Println(price, err)
	// Output: 1299 <nil>
}

func ExampleCallWithFallbackAcceptable() {
	b := breaker.MustNew(breaker.WithName("prices"),
		breaker.WithClock(exampleClock()), breaker.WithProba(proba.NewSeeded(1)))
	errDown := errors.New("connection refused")

	served := map[string]int{}
	for range 100 {
		price, err := breaker.CallWithFallbackAcceptable(context.Background(), b,
			func(ctx context.Context) (int, error) { return 0, errDown }, // the dependency is down
			func(err error) (int, error) { return 999, nil },             // dropped: a cached price
			nil, // only a nil error is a success
		)
		switch {
		case err != nil:
			served["error"]++
		case price == 999:
			served["cached"]++
		}
	}
	fmt.Println(served)
	// Output: map[cached:79 error:21]
}
