package goredisbreaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/goredisbreaker"
)

var sinkErr error

// benchClients returns two clients of one redis-server started for the
// benchmark: one bare, one instrumented with a breaker from a registry of
// its own (the real clock), and the key "k" set.
func benchClients(b *testing.B) (bare, hooked *redis.Client, registry *breaker.Registry) {
	s := newServer(b)
	bare, hooked = s.client(), s.client()
	registry = breaker.MustNewRegistry()
	if err := goredisbreaker.Instrument(hooked, goredisbreaker.WithRegistry(registry)); err != nil {
		b.Fatal(err)
	}
	if err := bare.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		b.Fatal(err)
	}
	return bare, hooked, registry
}

// BenchmarkGet compares a GET through the bare client and through the hook
// against the same server, and measures the breaker's own share: the
// registry lookup, AllowCtx and Accept the hook makes per command. The
// hook's budget is allow-accept + 10 % of bare.
func BenchmarkGet(b *testing.B) {
	bare, hooked, registry := benchClients(b)
	ctx := context.Background()
	run := func(rdb *redis.Client) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				sinkErr = rdb.Get(ctx, "k").Err()
			}
		}
	}
	b.Run("bare", run(bare))
	b.Run("hooked", run(hooked))
	key := goredisbreaker.DefaultKey(hooked.Options().Addr)
	b.Run("allow-accept", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			p, err := registry.Get(key).AllowCtx(ctx)
			if err == nil {
				p.Accept()
			}
			sinkErr = err
		}
	})
}

// BenchmarkGetInterleaved sends a GET through the bare client and one
// through the hook in turn, timing each, so that the drift of a shared,
// noisy machine falls on both alike; it reports the mean of each side
// (bare-ns/op, hooked-ns/op) and their ratio (hooked/bare).
func BenchmarkGetInterleaved(b *testing.B) {
	bare, hooked, _ := benchClients(b)
	ctx := context.Background()
	var onBare, onHooked time.Duration
	b.ReportAllocs()
	for i := range b.N {
		first, second := bare, hooked
		if i%2 == 1 { // each goes first half the time
			first, second = hooked, bare
		}
		t0 := time.Now()
		sinkErr = first.Get(ctx, "k").Err()
		t1 := time.Now()
		sinkErr = second.Get(ctx, "k").Err()
		t2 := time.Now()
		if first == bare {
			onBare, onHooked = onBare+t1.Sub(t0), onHooked+t2.Sub(t1)
		} else {
			onHooked, onBare = onHooked+t1.Sub(t0), onBare+t2.Sub(t1)
		}
	}
	b.ReportMetric(float64(onBare.Nanoseconds())/float64(b.N), "bare-ns/op")
	b.ReportMetric(float64(onHooked.Nanoseconds())/float64(b.N), "hooked-ns/op")
	b.ReportMetric(float64(onHooked)/float64(onBare), "hooked/bare")
}

// BenchmarkGetParallel is BenchmarkGet from GOMAXPROCS goroutines at once.
func BenchmarkGetParallel(b *testing.B) {
	bare, hooked, _ := benchClients(b)
	ctx := context.Background()
	run := func(rdb *redis.Client) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var err error
				for pb.Next() {
					err = rdb.Get(ctx, "k").Err()
				}
				_ = err
			})
		}
	}
	b.Run("bare", run(bare))
	b.Run("hooked", run(hooked))
}

// BenchmarkPipeline compares a pipeline of ten GETs, one breaker decision.
func BenchmarkPipeline(b *testing.B) {
	bare, hooked, _ := benchClients(b)
	ctx := context.Background()
	run := func(rdb *redis.Client) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				_, sinkErr = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for range 10 {
						p.Get(ctx, "k")
					}
					return nil
				})
			}
		}
	}
	b.Run("bare", run(bare))
	b.Run("hooked", run(hooked))
}
