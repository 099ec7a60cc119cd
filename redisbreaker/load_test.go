package redisbreaker_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// countingConn counts the bytes a client sends and receives.
type countingConn struct {
	net.Conn
	sent, received *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.received.Add(int64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.sent.Add(int64(n))
	return n, err
}

// BenchmarkSharer_Sync measures what one round of one process costs Redis,
// in a fleet of N processes sharing M breakers: the bytes sent and received
// per round (one round trip), as custom metrics. A process makes one round
// per period (DefaultPeriod: 10 a second), the fleet N times that. The
// names of the breakers are those of a typical registry ("GET
// api.example.com"); the default prefix is used. Each breaker's window
// holds 50 calls a bucket, so that its history holds a full window of
// buckets, with counts of two digits.
func BenchmarkSharer_Sync(b *testing.B) {
	srv := startRedis(b)
	for _, size := range []struct{ processes, breakers int }{{10, 1}, {50, 1}, {50, 10}, {200, 10}} {
		b.Run(fmt.Sprintf("N=%d/M=%d", size.processes, size.breakers), func(b *testing.B) {
			ctx := context.Background()
			clk := newVirtualClock()
			var sent, received atomic.Int64
			rdb := redis.NewClient(&redis.Options{Addr: srv.addr,
				Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
					c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return countingConn{Conn: c, sent: &sent, received: &received}, nil
				}})
			defer rdb.Close()
			require.NoError(b, rdb.FlushAll(ctx).Err())
			var measured *redisbreaker.Sharer
			var all []breaker.Breaker
			sharers := make([]*redisbreaker.Sharer, size.processes)
			for p := range size.processes {
				s, err := redisbreaker.New(rdb, redisbreaker.WithClock(clk))
				require.NoError(b, err)
				for m := range size.breakers {
					br := breaker.MustNew(breaker.WithName(fmt.Sprintf("GET api-%d.example.com", m)), breaker.WithClock(clk))
					require.NoError(b, s.Share(br))
					all = append(all, br)
				}
				sharers[p] = s
				measured = s
			}
			// A window of buckets, each of 50 calls, a few of them failed:
			// histories of a busy dependency.
			for range 20 {
				for _, br := range all {
					for i := range 50 {
						if p, err := br.Allow(); err == nil {
							if i%20 == 0 {
								p.Reject("boom")
							} else {
								p.Accept()
							}
						}
					}
				}
				clk.advance(span)
			}
			for _, s := range sharers {
				require.NoError(b, s.Sync(ctx))
			}
			sent.Store(0)
			received.Store(0)
			b.ResetTimer()
			for range b.N {
				if err := measured.Sync(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(sent.Load())/float64(b.N), "sent-B/round")
			b.ReportMetric(float64(received.Load())/float64(b.N), "received-B/round")
		})
	}
}
