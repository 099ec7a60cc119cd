package goredisbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/goredisbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// A client whose server cannot be reached: after a few failed commands,
// its breaker sheds the next ones before they wait for a connection.
func Example() {
	rdb := redis.NewClient(&redis.Options{
		Addr: "cache.internal:6379",
		// The example has no server: every dial fails at once.
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("connect: connection refused")
		},
		MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
	})
	defer rdb.Close()

	// A mock clock and seeded draws keep the output fixed; a program leaves
	// out WithRegistry, or passes a registry of its own.
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
	if err := goredisbreaker.Instrument(rdb, goredisbreaker.WithRegistry(registry)); err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	for i := 1; i <= 100; i++ {
		err := rdb.Get(ctx, "session:42").Err()
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			fmt.Printf("command %d shed\n", i)
			break
		}
	}
	stats := registry.Get("redis:cache.internal:6379").Stats()
	fmt.Println("failures before:", stats.Failures)
	// Output:
	// command 7 shed
	// failures before: 6
}
