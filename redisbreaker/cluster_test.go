package redisbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/redisbreaker"
	"github.com/srebreaker/srebreaker/redisbreaker/internal/redistest"
)

// roundDeadline bounds every round of the cluster test: a round that
// waited on a dead master for longer would fail the test.
const roundDeadline = 2 * time.Second

// On a Redis Cluster each breaker's keys share one slot, and breakers
// spread over the shards; a round talks to each shard on its own. Each
// master in turn is killed (SIGKILL) while one process's calls fail: the
// other process's breakers on the other shards see those failures in
// every round, within two periods; the dead shard's decide on their own
// histories until its replica takes over, and share again within a second
// of the replica answering. Rounds run every period of real time, as the
// loop runs them, each with a deadline; the sharers' time is the test's.
func TestSharer_Sync_aClusterLosesEachMasterInTurn(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	clk := newVirtualClock()
	masters := c.Masters()
	require.Len(t, masters, 3)

	// Three breakers on each master.
	byMaster := make(map[string][]string)
	for i := 0; len(byMaster) < 3 || anyShort(byMaster, 3); i++ {
		name := fmt.Sprint("dependency-", i)
		addr := c.MasterOf("test:{" + name + "}:4:0")
		if len(byMaster[addr]) < 3 {
			byMaster[addr] = append(byMaster[addr], name)
		}
	}
	var names []string
	for _, ns := range byMaster {
		names = append(names, ns...)
	}
	slices.Sort(names)

	type process struct {
		sharer   *redisbreaker.Sharer
		breakers map[string]breaker.Breaker
		log      *logBuffer
	}
	newProcess := func() process {
		log := &logBuffer{}
		// No retries: a dead node's commands fail at once, and nothing is
		// sent twice.
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true,
			MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
			NewClient: func(opt *redis.Options) *redis.Client {
				opt.DialerRetries = 1
				return redis.NewClient(opt)
			}})
		t.Cleanup(func() { _ = rdb.Close() })
		s, err := redisbreaker.New(rdb, redisbreaker.WithClock(clk), redisbreaker.WithPrefix("test:"),
			redisbreaker.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		p := process{sharer: s, breakers: make(map[string]breaker.Breaker), log: log}
		for _, n := range names {
			p.breakers[n] = breaker.MustNew(breaker.WithName(n), breaker.WithClock(clk), breaker.WithProba(proba.NewSeeded(1)))
			require.NoError(t, s.Share(p.breakers[n]))
		}
		return p
	}
	a, b := newProcess(), newProcess()
	round := func(p process) error {
		ctx, cancel := context.WithTimeout(context.Background(), roundDeadline)
		defer cancel()
		err := p.sharer.Sync(ctx)
		require.NoError(t, ctx.Err(), "a round within its deadline")
		return err
	}

	for k, victim := range masters {
		// Calm: no failures in the windows, every breaker shares.
		clk.advance(3 * breaker.DefaultWindow)
		for _, p := range []process{b, a} {
			var err error
			for range 20 { // until the client has the slot map of the last failover
				if err = round(p); err == nil {
					break
				}
				clk.advance(span)
			}
			require.NoError(t, err, "kill %d: every shard answers before it", k)
		}
		for _, n := range names {
			require.Equal(t, 0.0, dropProbability(t, a.breakers[n]), "kill %d: %s calm", k, n)
		}
		dead := byMaster[victim]
		replicas := c.ReplicasOf(victim)
		require.NotEmpty(t, replicas, "kill %d: %s has a replica", k, victim)
		probes := make([]*redis.Client, len(replicas))
		for i, r := range replicas {
			probes[i] = redis.NewClient(&redis.Options{Addr: r, MaxRetries: -1, DialTimeout: time.Second,
				ReadTimeout: time.Second, WriteTimeout: time.Second})
			defer probes[i].Close()
		}

		c.KillMaster(victim)
		killed := time.Now()
		var answered, recovered time.Time
		tick := time.NewTicker(redisbreaker.DefaultPeriod) // the loop's pace, in real time: Redis fails over in it
		for i := 0; recovered.IsZero(); i++ {
			require.Less(t, time.Since(killed), redistest.ClusterDeadline, "kill %d: the dead shard's breakers never shared again", k)
			if answered.IsZero() && answers(probes, "test:{"+dead[0]+"}:probe") {
				answered = time.Now()
			}
			for _, br := range b.breakers {
				fail(br, 30) // b's calls fail: a learns it from the fleet
			}
			clk.advance(span)
			errB, errA := round(b), round(a)
			for _, n := range names {
				if slices.Contains(dead, n) {
					continue
				}
				key := fmt.Sprintf("%q", "test:{"+n+"}")
				for _, err := range []error{errA, errB} {
					if err != nil {
						assert.NotContains(t, err.Error(), key, "kill %d, round %d: %s is on a live master", k, i, n)
					}
				}
				if i >= 1 {
					require.Greater(t, dropProbability(t, a.breakers[n]), 0.5,
						"kill %d, round %d: %s sheds on b's failures within two periods", k, i, n)
				}
			}
			if errA == nil && errB == nil && !answered.IsZero() {
				shares := true
				for _, n := range dead {
					shares = shares && dropProbability(t, a.breakers[n]) > 0.5
				}
				if shares {
					recovered = time.Now()
				}
			}
			if recovered.IsZero() {
				<-tick.C
			}
		}
		tick.Stop()
		t.Logf("kill %d (%s): the replica answered %s after the kill, its breakers shared again %s after that",
			k, victim, answered.Sub(killed).Round(time.Millisecond), recovered.Sub(answered).Round(time.Millisecond))
		assert.LessOrEqual(t, recovered.Sub(answered), time.Second, "kill %d: the dead shard's breakers share within 1 s of the replica answering", k)

		c.WaitFailover(t, victim)
		c.Restart(victim) // a replica again, of the node that took over
	}
	for _, p := range []process{a, b} {
		assert.Equal(t, 6, p.log.count("Redis Cluster shard 127.0.0.1"), "one warning per dead shard and one recovery:\n%s", &p.log.buf)
		assert.Equal(t, 3, p.log.count("unreachable; its breakers decide on their own histories"), "%s", &p.log.buf)
		assert.Equal(t, 3, p.log.count("reachable again; its breakers decide on the fleet's histories"), "%s", &p.log.buf)
		assert.Zero(t, p.log.count("msg=\"redisbreaker: Redis unreachable"), "never the whole Redis: %s", &p.log.buf)
	}
}

// answers reports whether one of the nodes answers a command on key's
// slot as its master would: a replica redirects it.
func answers(nodes []*redis.Client, key string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.Get(ctx, key).Err(); err == nil || errors.Is(err, redis.Nil) {
			return true
		}
	}
	return false
}

func anyShort(byMaster map[string][]string, n int) bool {
	for _, ns := range byMaster {
		if len(ns) < n {
			return true
		}
	}
	return false
}
