package redisbreaker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// gridCounts reads every block of the breaker named name under the
// prefix "test:" and returns its buckets' counters by bucket number, and
// the processes each block counted.
func gridCounts(t *testing.T, rdb *redis.Client, name string) (map[int64]fleet.Bucket, map[int64]int64) {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "test:{"+name+"}:4:*").Result()
	require.NoError(t, err)
	buckets, processes := make(map[int64]fleet.Bucket), make(map[int64]int64)
	const size = 20
	for _, key := range keys {
		var k int64
		_, err := fmt.Sscanf(key, "test:{"+name+"}:4:%d", &k)
		require.NoError(t, err, key)
		v, err := rdb.Get(ctx, key).Bytes()
		require.NoError(t, err)
		c := func(j int) int64 {
			if 4*j+4 > len(v) {
				return 0
			}
			return int64(binary.BigEndian.Uint32(v[4*j:]))
		}
		for i := range size {
			if b := (fleet.Bucket{Successes: c(3 * i), Failures: c(3*i + 1), Drops: c(3*i + 2)}); b != (fleet.Bucket{}) {
				buckets[k*size+int64(i)] = b
			}
		}
		processes[k] = c(3 * size)
	}
	return buckets, processes
}

// The fleet's counters hold, bucket by bucket, what each process's
// breaker counted as of its last round: nothing lost, nothing counted
// twice, whatever the order of the rounds, and a process that stops
// leaves what it added.
func TestSharer_Sync_theGridHoldsWhatEveryProcessCounted(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client()
	clk := newVirtualClock()
	procs := []*process{newProcess(t, srv, clk, "a"), newProcess(t, srv, clk, "b"), newProcess(t, srv, clk, "c")}
	published := make([]map[int64]fleet.Bucket, len(procs)) // per process, bucket: as of its last round
	for i := range published {
		published[i] = make(map[int64]fleet.Bucket)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 150 {
		for i, p := range procs {
			someCalls(r, p.b)
			clk.advance(span / 3)
			if round > 80 && i == 2 {
				continue // c stops
			}
			m, _ := fleet.Of(p.b)
			h := m.History()
			require.NoError(t, p.sync(t))
			for j, b := range h.Buckets {
				published[i][h.Newest-int64(len(h.Buckets))+1+int64(j)] = b
			}
			want := make(map[int64]fleet.Bucket)
			for _, pub := range published {
				for n, b := range pub {
					if b != (fleet.Bucket{}) {
						w := want[n]
						want[n] = fleet.Bucket{Successes: w.Successes + b.Successes, Failures: w.Failures + b.Failures,
							Drops: w.Drops + b.Drops}
					}
				}
			}
			got, processes := gridCounts(t, rdb, "payments")
			require.Equal(t, want, got, "round %d, process %d", round, i)
			for k, n := range processes {
				require.LessOrEqual(t, n, int64(3), "block %d counts each process once", k)
			}
		}
	}
	_, processes := gridCounts(t, rdb, "payments")
	ks := slices.Sorted(func(yield func(int64) bool) {
		for k := range processes {
			if !yield(k) {
				return
			}
		}
	})
	assert.Equal(t, int64(2), processes[ks[len(ks)-1]], "c has stopped: the newest block counts a and b")
	assert.Equal(t, int64(3), processes[ks[0]])
}

// A process that stops leaves its counts, which age out of the others'
// window with the grid; the keys expire on their own.
func TestSharer_Sync_aStoppedProcessAgesOut(t *testing.T) {
	srv := startRedis(t)
	clk, a, _ := sharedOutage(t, srv)

	ctx := context.Background()
	keys, err := srv.client().Keys(ctx, "test:{payments}:4:*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, key := range keys {
		ttl, err := srv.client().PTTL(ctx, key).Result()
		require.NoError(t, err)
		assert.Equal(t, time.Duration(-1), ttl, "%s: no TTL while it is the newest block, the busiest key", key)
	}

	clk.advance(breaker.DefaultWindow + time.Millisecond) // b stops
	require.NoError(t, a.sync(t))
	assert.Equal(t, 0.0, dropProbability(t, a.b), "b's counts have left the window")
	for _, key := range keys {
		ttl, err := srv.client().PTTL(ctx, key).Result()
		require.NoError(t, err)
		assert.InDelta(t, (35 * breaker.DefaultWindow).Seconds(), ttl.Seconds(), 0.5,
			"%s: its first processes give it its TTL once it is no longer the newest", key)
	}
}

// A fleet's size lengthens the period of its breaker's rounds, so that
// its processes make at most 10,000 rounds a second on it; the view is
// never more than a second old.
func TestSharer_Sync_aLargeFleetSlowsItsRounds(t *testing.T) {
	srv := startRedis(t)
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a")
	require.NoError(t, a.sync(t))
	st, err := a.sharer.Status("payments")
	require.NoError(t, err)
	assert.Equal(t, redisbreaker.Status{Processes: 1, Period: redisbreaker.DefaultPeriod, Synced: clk.Now()}, st)

	// 4,999 other processes counted themselves in the newest block.
	ctx := context.Background()
	keys, err := srv.client().Keys(ctx, "test:{payments}:4:*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.NoError(t, srv.client().Do(ctx, "BITFIELD", keys[0], "INCRBY", "u32", "#60", 4999).Err())
	clk.advance(span)
	require.NoError(t, a.sync(t))
	st, err = a.sharer.Status("payments")
	require.NoError(t, err)
	assert.Equal(t, int64(5000), st.Processes)
	assert.Equal(t, 500*time.Millisecond, st.Period)

	// The loop runs the breaker's round when it is due: not at the next
	// tick of the sharer's period, but at the fifth.
	require.NoError(t, srv.client().Do(ctx, "BITFIELD", keys[0], "INCRBY", "u32", "#60", 1_000_000).Err())
	require.NoError(t, a.sync(t))
	st, err = a.sharer.Status("payments")
	require.NoError(t, err)
	assert.Equal(t, time.Second, st.Period, "at most a second")
}

// Keys that hold what a v4 sharer cannot use: the breaker decides on its
// own history, the others go on.
func TestSharer_Sync_unusableBlocks(t *testing.T) {
	srv := startRedis(t)
	clk, a, _ := sharedOutage(t, srv)
	ctx := context.Background()
	rdb := srv.client()

	other := breaker.MustNew(breaker.WithName("other"), breaker.WithClock(clk))
	require.NoError(t, a.sharer.Share(other))
	require.NoError(t, a.sync(t))
	keys, err := rdb.Keys(ctx, "test:{other}:4:*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)

	require.NoError(t, rdb.Set(ctx, keys[0], string(make([]byte, 4*61+1)), 0).Err())
	err = a.sync(t)
	assert.ErrorIs(t, err, redisbreaker.ErrBadData)
	assert.ErrorContains(t, err, "unusable counters: key \"test:{other}:4:")
	assert.ErrorContains(t, err, "holds 245 bytes: more than a block of 20 buckets")
	assert.Greater(t, dropProbability(t, a.b), 0.5, "the other breaker still shares")

	require.NoError(t, rdb.Del(ctx, keys[0]).Err())
	require.NoError(t, rdb.HSet(ctx, keys[0], "x", "y").Err())
	fail(other, 1) // a call to add: a write to the key
	err = a.sync(t)
	assert.ErrorIs(t, err, redisbreaker.ErrBadData)
	assert.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, 1, a.log.count("unusable data in Redis"), "logged once")

	require.NoError(t, rdb.Del(ctx, keys[0]).Err())
	require.NoError(t, a.sync(t))
	assert.Equal(t, 1, a.log.count("data in Redis usable again"))
	assert.Greater(t, dropProbability(t, a.b), 0.5)
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
