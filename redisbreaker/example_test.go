package redisbreaker_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// A process shares the breakers of its registry with the other processes
// of its fleet. This example needs a Redis, so it is compiled but not run
// (it has no Output comment); the package's tests start a redis-server.
func Example() {
	// No retries: go-redis would send a round's additions again after a
	// timeout, and they would count twice.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true, MaxRetries: -1})
	defer rdb.Close()

	sharer, err := redisbreaker.New(rdb, redisbreaker.WithPrefix("checkout:"))
	if err != nil {
		log.Fatal(err)
	}
	registry := breaker.MustNewRegistry()
	if err := sharer.Share(registry.Get("payments")); err != nil {
		log.Fatal(err)
	}
	if err := sharer.Start(); err != nil {
		log.Fatal(err)
	}
	defer sharer.Close() // before rdb.Close

	payments := registry.Get("payments")
	_ = payments.Do(func() error { return nil }) // decided on the fleet's counts and its own
}

// An operator's tool sheds every call to payments, in every process of the
// checkout fleet, for ten minutes: each process's sharer reads the
// override in its next round. Compiled, not run: it needs a Redis.
func ExampleSharer_SetOverride() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()

	ops, err := redisbreaker.New(rdb, redisbreaker.WithPrefix("checkout:")) // not started: it only writes
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	err = ops.SetOverride(ctx, "payments", override.Spec{
		Mode: override.ShedAll, TTL: 10 * time.Minute, Reason: "database failover, INC-1234", By: "alice",
	})
	if err != nil {
		log.Fatal(err)
	}
}
