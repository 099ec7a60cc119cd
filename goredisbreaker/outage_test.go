package goredisbreaker_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/goredisbreaker"
)

// These tests take a real redis-server down and up again, so they run on
// real time: each wait polls, a command per millisecond, and gives up at a
// deadline of a second, the bound the package promises.

// pollInterval is how often the tests below send a command while they wait.
const pollInterval = time.Millisecond

// bound is how long a breaker may take to shed a dead node, and a healed
// node to serve again.
const bound = time.Second

// tally counts what a stream of commands got.
type tally struct{ ok, failed, dropped int }

// until sends call every pollInterval until done says it is enough, or
// bound passes; it returns how long it took and what the commands got, and
// fails the test at the deadline.
func until(t *testing.T, what string, call func() error, done func(err error) bool) (time.Duration, tally) {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var n tally
	for {
		err := call()
		switch {
		case isOK(err):
			n.ok++
		case errors.Is(err, breaker.ErrServiceUnavailable):
			n.dropped++
		default:
			n.failed++
		}
		if done(err) {
			return time.Since(start), n
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: not within %v; last error %v; %+v", what, bound, err, n)
		}
		<-tick.C
	}
}

func isDrop(err error) bool { return errors.Is(err, breaker.ErrServiceUnavailable) }

// isOK says whether a command got an answer: the restarted server, which
// keeps nothing on disk, has lost the key.
func isOK(err error) bool { return err == nil || errors.Is(err, redis.Nil) }

// checkPool sends a command on each of the pool's connections at once and
// fails the test if any of them fails for a reason other than a drop: no
// broken connection is left in the pool.
func checkPool(t *testing.T, rdb redis.UniversalClient, conns int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rdb.Get(ctx, "k").Err(); !isOK(err) && !isDrop(err) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a command after recovery failed: %v", err)
	}
}

func TestInstrument_outage(t *testing.T) {
	s := newServer(t)
	registry := breaker.MustNewRegistry() // the real clock: the server goes down for real
	opts := s.options()
	// go-redis fails fast after PoolSize failed dials in a row, and then
	// dials again once a second only: keep the test clear of that.
	opts.PoolSize = 100
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, goredisbreaker.Instrument(rdb, goredisbreaker.WithRegistry(registry)))
	ctx := context.Background()
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	checkPool(t, rdb, 8) // eight connections in the pool, which the server's death breaks
	get := func() error { return rdb.Get(ctx, "k").Err() }

	s.stop()
	shed, down := until(t, "shed after the server stopped", get, isDrop)
	t.Logf("server stopped: first drop after %v (%d failures)", shed, down.failed)

	s.start()
	healed, up := until(t, "a command succeeds after the server started", get, isOK)
	t.Logf("server started: first success after %v (%d drops, %d failures)", healed, up.dropped, up.failed)
	assert.Zero(t, up.failed, "no command fails on a broken connection once the server is back")

	checkPool(t, rdb, 8)
	st := *rdb.PoolStats()
	assert.Equal(t, st.TotalConns, st.IdleConns, "every connection is back in the pool")
}

// In a Cluster each node has its breaker: a dead node's commands are shed,
// the other node's are not. The two nodes are plain redis-servers that a
// ClusterClient shares the slots between (ClusterOptions.ClusterSlots).
func TestInstrument_clusterShedsOneNode(t *testing.T) {
	a, b := newServer(t), newServer(t)
	// go-redis names a node whose address ClusterSlots gives as loopback by
	// its port alone (the host of the node it learned the slots from, none
	// here): the names of the nodes' breakers.
	nodeA, nodeB := ":"+port(t, a.addr), ":"+port(t, b.addr)
	registry := breaker.MustNewRegistry()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{
				{Start: 0, End: 8191, Nodes: []redis.ClusterNode{{Addr: a.addr}}},
				{Start: 8192, End: 16383, Nodes: []redis.ClusterNode{{Addr: b.addr}}},
			}, nil
		},
		NewClient: func(opt *redis.Options) *redis.Client { // ClusterOptions has no DialerRetries
			opt.DialerRetries, opt.DialerRetryTimeout = 1, time.Millisecond
			return redis.NewClient(opt)
		},
		MaxRedirects: -1, MaxRetries: -1, PoolSize: 100,
		DialTimeout: opTimeout, ReadTimeout: opTimeout, WriteTimeout: opTimeout,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, goredisbreaker.Instrument(rdb, goredisbreaker.WithRegistry(registry)))
	ctx := context.Background()
	keyA, keyB := keyInSlots(0, 8191), keyInSlots(8192, 16383)
	require.NoError(t, rdb.Set(ctx, keyA, "a", 0).Err())
	require.NoError(t, rdb.Set(ctx, keyB, "b", 0).Err())
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // one pipeline per node
		p.Get(ctx, keyA)
		p.Get(ctx, keyB)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(2), statsOf(t, registry, nodeA).Successes, "node A: SET, and its part of the pipeline")
	assert.Equal(t, int64(2), statsOf(t, registry, nodeB).Successes, "node B: SET, and its part of the pipeline")

	a.stop()
	shed, down := until(t, "node A shed", func() error { return rdb.Get(ctx, keyA).Err() }, isDrop)
	t.Logf("node A stopped: first drop after %v (%d failures)", shed, down.failed)
	for range 100 {
		require.NoError(t, rdb.Get(ctx, keyB).Err(), "node B serves on")
	}
	assert.Zero(t, statsOf(t, registry, nodeB).Drops+statsOf(t, registry, nodeB).Failures)

	a.start()
	healed, _ := until(t, "node A serves again", func() error { return rdb.Get(ctx, keyA).Err() }, isOK)
	t.Logf("node A started: first success after %v", healed)
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return p
}

// keyInSlots returns a key whose cluster hash slot is in [lo, hi].
func keyInSlots(lo, hi uint16) string {
	for i := 0; ; i++ {
		key := string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		if s := crc16([]byte(key)) % 16384; lo <= s && s <= hi {
			return key
		}
	}
}

// crc16 is the CRC-16/XMODEM checksum Redis Cluster hashes keys with.
func crc16(data []byte) uint16 {
	var crc uint16
	for _, c := range data {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
