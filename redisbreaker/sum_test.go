package redisbreaker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// sparse is a history as bucket and block numbers to their non-empty
// counts, to compare histories whatever empty buckets they hold.
type sparse struct {
	newest          int64
	buckets, blocks map[int64]fleet.Bucket
}

func sparseOf(h fleet.History) sparse {
	s := sparse{newest: h.Newest, buckets: map[int64]fleet.Bucket{}, blocks: map[int64]fleet.Bucket{}}
	for i, b := range h.Buckets {
		if b != (fleet.Bucket{}) {
			s.buckets[h.Newest-int64(len(h.Buckets))+1+int64(i)] = b
		}
	}
	for i, b := range h.Blocks {
		if b != (fleet.Bucket{}) {
			s.blocks[h.NewestBlock-int64(len(h.Blocks))+1+int64(i)] = b
		}
	}
	return s
}

// The script's running sum, kept bucket by bucket as processes replace
// their histories, is the merge of the histories in the hash: after every
// round, sweeping or not.
func TestSharer_Sync_theRunningSumIsTheMerge(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client()
	ctx := context.Background()
	clk := newVirtualClock()
	v3 := redisbreaker.WithV3(true)
	procs := []*process{newProcess(t, srv, clk, "a", v3), newProcess(t, srv, clk, "b", v3), newProcess(t, srv, clk, "c", v3)}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 120 {
		for i, p := range procs {
			someCalls(r, p.b)
			clk.advance(span / 3)
			if round > 60 && i == 2 {
				continue // c stops publishing: its history goes stale
			}
			require.NoError(t, p.sync(t))

			all, err := rdb.HGetAll(ctx, "test:payments").Result()
			require.NoError(t, err)
			var merged fleet.History
			for field, value := range all {
				if !strings.HasPrefix(field, "=3 ") {
					continue
				}
				_, data, _ := strings.Cut(value, " ")
				var h fleet.History
				require.NoError(t, h.UnmarshalBinary([]byte(data)), field)
				merged, err = merged.Merge(h)
				require.NoError(t, err)
			}
			var sum fleet.History
			require.NoError(t, sum.UnmarshalBinary([]byte(all["=hsum"])))
			want, got := sparseOf(merged), sparseOf(sum)
			want.newest = got.newest // the running sum's newest only grows; the buckets must agree
			require.Equal(t, want, got, fmt.Sprintf("round %d, process %d", round, i))
		}
	}
}

// someCalls makes up to 7 calls through b, a third of them failing.
func someCalls(r *rand.Rand, b breaker.Breaker) {
	for range r.IntN(8) {
		if c, err := b.Allow(); err == nil {
			if r.IntN(3) == 0 {
				c.Reject("boom")
			} else {
				c.Accept()
			}
		}
	}
}
