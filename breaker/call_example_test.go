package breaker_test

import (
	"context"
	"fmt"

	"github.com/srebreaker/srebreaker/breaker"
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
