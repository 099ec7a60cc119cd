package redisbreaker_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/redisbreaker"
	"github.com/srebreaker/srebreaker/redisbreaker/internal/redistest"
)

// On a Redis Cluster each breaker's keys share one slot, and breakers
// spread over the shards; when a master dies, its breakers decide on
// their own histories until its replica takes over, and the others never
// notice.
func TestSharer_Sync_onACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	clk := newVirtualClock()
	ctx := context.Background()

	// Two breakers on each master.
	byMaster := make(map[string][]string)
	for i := 0; len(byMaster) < 3 || anyShort(byMaster, 2); i++ {
		name := fmt.Sprint("dependency-", i)
		addr := c.MasterOf("test:{" + name + "}:4:0")
		if len(byMaster[addr]) < 2 {
			byMaster[addr] = append(byMaster[addr], name)
		}
	}
	var names []string
	for _, ns := range byMaster {
		names = append(names, ns...)
	}
	type process struct {
		sharer   *redisbreaker.Sharer
		breakers map[string]breaker.Breaker
		log      *logBuffer
	}
	newProcess := func(id string) process {
		log := &logBuffer{}
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true,
			DialTimeout: defaultTestTimeout, ReadTimeout: defaultTestTimeout, WriteTimeout: defaultTestTimeout})
		t.Cleanup(func() { _ = rdb.Close() })
		s, err := redisbreaker.New(rdb, redisbreaker.WithClock(clk),
			redisbreaker.WithPrefix("test:"), redisbreaker.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		p := process{sharer: s, breakers: make(map[string]breaker.Breaker), log: log}
		for _, n := range names {
			p.breakers[n] = breaker.MustNew(breaker.WithName(n), breaker.WithClock(clk), breaker.WithProba(proba.NewSeeded(1)))
			require.NoError(t, s.Share(p.breakers[n]))
		}
		return p
	}
	a, b := newProcess("a"), newProcess("b")
	outage := func() error { // b's calls fail; a learns it from the fleet
		for _, br := range b.breakers {
			fail(br, 30)
		}
		clk.advance(span)
		return b.sharer.Sync(ctx)
	}
	require.NoError(t, outage())
	require.NoError(t, a.sharer.Sync(ctx))
	for n, br := range a.breakers {
		require.Greater(t, dropProbability(t, br), 0.5, "%s sheds on the fleet's counts", n)
	}

	victim := c.MasterOf("test:{" + names[0] + "}:4:0")
	c.KillMaster(victim)
	clk.advance(breaker.DefaultWindow + span)                // the outage's failures leave the window
	assert.ErrorIs(t, outage(), redisbreaker.ErrUnreachable) // b reaches the other masters
	err := a.sharer.Sync(ctx)
	assert.ErrorIs(t, err, redisbreaker.ErrUnreachable)
	for n, br := range a.breakers {
		if byMasterOf(byMaster, n) == victim {
			assert.Equal(t, 0.0, dropProbability(t, br), "%s: its master is down; it decides on its own counts", n)
			assert.ErrorContains(t, err, fmt.Sprintf("key %q", "test:{"+n+"}"))
		} else {
			assert.Greater(t, dropProbability(t, br), 0.5, "%s: the other masters' breakers never notice", n)
			assert.NotContains(t, err.Error(), fmt.Sprintf("key %q", "test:{"+n+"}"))
		}
	}
	assert.Equal(t, 2, a.log.count("Redis unreachable for a breaker; it decides on its own history"), "once for each of its breakers: %s", &a.log.buf)

	c.WaitFailover(t, victim)
	for _, p := range []process{b, a} {
		var syncErr error
		for range 10 { // until the sharer's client has the new slot map
			if syncErr = p.sharer.Sync(ctx); syncErr == nil {
				break
			}
		}
		require.NoError(t, syncErr, "the processes rejoin through the promoted replica")
	}
	clk.advance(3 * breaker.DefaultWindow) // what the outages left leaves the windows
	require.NoError(t, outage())
	require.NoError(t, a.sharer.Sync(ctx))
	for n, br := range a.breakers {
		assert.Greater(t, dropProbability(t, br), 0.5, "%s shares again", n)
	}
	assert.Equal(t, 2, a.log.count("Redis reachable again for a breaker"), "%s", &a.log.buf)
}

func anyShort(byMaster map[string][]string, n int) bool {
	for _, ns := range byMaster {
		if len(ns) < n {
			return true
		}
	}
	return false
}

func byMasterOf(byMaster map[string][]string, name string) string {
	for addr, ns := range byMaster {
		for _, n := range ns {
			if n == name {
				return addr
			}
		}
	}
	return ""
}
