package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/srebreaker/srebreaker/redisbreaker/internal/redistest"
)

func TestMain(m *testing.M) {
	// A cluster client reloads its slot map in a goroutine of its own,
	// which lingers for 200 ms after the reload, past Close; and a pool of
	// a killed node redials in the background once a second until it sees
	// it is closed.
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*clusterStateHolder).LazyReload.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

func TestCluster_KillMaster_replicaTakesOver(t *testing.T) {
	began := time.Now()
	c := redistest.StartCluster(t, 3, 1)
	t.Logf("3 masters with a replica each formed a cluster in %s", time.Since(began).Round(time.Millisecond))
	require.Len(t, c.Addrs(), 6)
	masters := c.Masters()
	require.Len(t, masters, 3)
	rdb := c.Client()
	ctx := context.Background()

	// Keys spread over the slots, so that each master serves some.
	byMaster := make(map[string][]string)
	for i := range 30 {
		key := fmt.Sprintf("key:%d", i)
		require.NoError(t, rdb.Set(ctx, key, key, 0).Err())
		byMaster[c.MasterOf(key)] = append(byMaster[c.MasterOf(key)], key)
	}
	for _, m := range masters {
		assert.NotEmpty(t, byMaster[m], "no key of 30 landed on master %s", m)
	}

	victim := masters[0]
	key := byMaster[victim][0]
	// Redis replicates asynchronously: only a write the replica
	// acknowledged (WAIT, on the connection that wrote) survives the kill.
	direct := redis.NewClient(&redis.Options{Addr: victim, PoolSize: 1})
	t.Cleanup(func() { _ = direct.Close() })
	require.NoError(t, direct.Set(ctx, key, "acknowledged", 0).Err())
	acked, err := direct.Wait(ctx, 1, redistest.Timeout).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), acked, "the replica acknowledged the write")

	// While the victim is down and until its replica takes over, the
	// other masters serve their keys throughout.
	others := []string{byMaster[masters[1]][0], byMaster[masters[2]][0]}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads int
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Paced, not to starve the nodes of the 2 cores they share.
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, k := range others {
				if err := rdb.Get(ctx, k).Err(); err != nil && readErr == nil {
					readErr = fmt.Errorf("GET %s: %w", k, err)
				}
				reads++
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	killed := time.Now()
	c.KillMaster(victim)
	// go-redis retries a refused dial for a while (5 times, 100 ms apart,
	// per redirect); the failover takes longer.
	short, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	err = rdb.Get(short, key).Err()
	cancel()
	assert.Error(t, err, "the killed master's key can't be read before the failover")
	assert.False(t, errors.Is(err, redis.Nil), "the key is unreachable, not missing: %v", err)

	promoted := c.WaitFailover(t, victim)
	t.Logf("a replica took over %s after %s", victim, time.Since(killed).Round(time.Millisecond))
	close(stop)
	wg.Wait()
	assert.NoError(t, readErr, "the other masters served their keys throughout")
	assert.Positive(t, reads)

	assert.NotEqual(t, victim, promoted)
	assert.Equal(t, promoted, c.MasterOf(key), "the promoted replica serves the key's slot")
	assert.ElementsMatch(t, []string{promoted, masters[1], masters[2]}, c.Masters())
	// go-redis reloads the slot map on MOVED, or when it is 10 s old, not
	// when a node refuses connections: ask it to, not to wait that long.
	rdb.ReloadState(ctx)
	got, err := readWithin(ctx, rdb, key, redistest.ClusterDeadline)
	require.NoError(t, err, "the key is served again")
	t.Logf("the client read the key again %s after the kill", time.Since(killed).Round(time.Millisecond))
	assert.Equal(t, "acknowledged", got, "the write the replica acknowledged survived")
	require.NoError(t, rdb.Set(ctx, key, "after", 0).Err(), "the promoted replica takes writes")

	// The killed master rejoins as a replica of the node that took over.
	c.Restart(victim)
	assert.Equal(t, promoted, c.MasterOf(key))
	assert.ElementsMatch(t, []string{promoted, masters[1], masters[2]}, c.Masters())
	t.Logf("done %s after the kill", time.Since(killed).Round(time.Millisecond))
}

// readWithin reads key until a read succeeds or d has passed, and returns
// the last read.
func readWithin(ctx context.Context, rdb redis.Cmdable, key string, d time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := rdb.Get(ctx, key).Result()
		if err == nil || ctx.Err() != nil {
			return got, err
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}
