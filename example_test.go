package srebreaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

func ExampleIgnore() {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := breaker.MustNew(breaker.WithClock(mock))

	// A slow dependency, and a caller that gives up on it.
	callDependency := func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	promise, err := b.Allow()
	if err != nil {
		fmt.Println("dropped:", err)
		return
	}
	cancel()
	err = callDependency(ctx)
	switch {
	case errors.Is(err, context.Canceled):
		srebreaker.Ignore(promise) // says nothing about the dependency
	case err != nil:
		promise.Reject(err.Error())
	default:
		promise.Accept()
	}
	fmt.Println("reported:", err)
	// Output: reported: context canceled
}
