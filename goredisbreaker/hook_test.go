package goredisbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/goredisbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// mockRegistry returns a registry whose breakers read a mock clock, which
// never moves unless the test moves it, and draw from a seeded source.
func mockRegistry() *breaker.Registry {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
}

// statsOf returns the stats of the breaker of the node at addr.
func statsOf(t *testing.T, registry *breaker.Registry, addr string) breaker.Stats {
	t.Helper()
	s := (registry.Get(goredisbreaker.DefaultKey(addr))).Stats()
	return s
}

// instrumented returns a client of s with a hook whose breakers come from
// registry.
func instrumented(t *testing.T, s *server, registry *breaker.Registry, opts ...goredisbreaker.Option) *redis.Client {
	t.Helper()
	rdb := s.client()
	require.NoError(t, goredisbreaker.Instrument(rdb, append([]goredisbreaker.Option{goredisbreaker.WithRegistry(registry)}, opts...)...))
	return rdb
}

// breakNode records failures on the breaker of the node at addr until it
// drops calls with a probability of at least 0.8.
func breakNode(t *testing.T, registry *breaker.Registry, addr string) {
	t.Helper()
	b := registry.Get(goredisbreaker.DefaultKey(addr))
	for range 200 {
		if p, err := b.Allow(); err == nil {
			p.Reject("test: the node is down")
		}
	}
	require.GreaterOrEqual(t, statsOf(t, registry, addr).DropProbability, 0.8)
}

func TestInstrument_missIsSuccess(t *testing.T) {
	s := newServer(t)
	registry := mockRegistry()
	rdb := instrumented(t, s, registry)
	ctx := context.Background()

	for range 20 {
		assert.ErrorIs(t, rdb.Get(ctx, "missing").Err(), redis.Nil)
	}
	st := statsOf(t, registry, s.addr)
	assert.Equal(t, int64(20), st.Successes, "a cache miss is an answer of a healthy server")
	assert.Zero(t, st.Failures)
}

func TestInstrument_replyErrorsAreSuccesses(t *testing.T) {
	s := newServer(t)
	registry := mockRegistry()
	rdb := instrumented(t, s, registry)
	ctx := context.Background()

	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	assert.ErrorContains(t, rdb.LPush(ctx, "k", "x").Err(), "WRONGTYPE")
	assert.ErrorContains(t, rdb.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Err(), "NOSCRIPT")
	st := statsOf(t, registry, s.addr)
	assert.Equal(t, int64(3), st.Successes)
	assert.Zero(t, st.Failures)
}

// The commands go-redis sends to set a connection up (HELLO, SELECT,
// CLIENT SETNAME, CLIENT SETINFO) and the blocking ones are not counted.
func TestInstrument_setupAndBlockingExempt(t *testing.T) {
	s := newServer(t)
	registry := mockRegistry()
	opts := s.options()
	opts.DB, opts.ClientName = 1, "goredisbreaker-test"
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, goredisbreaker.Instrument(rdb, goredisbreaker.WithRegistry(registry)))
	ctx := context.Background()

	require.NoError(t, rdb.Ping(ctx).Err()) // dials and sets up a connection first
	assert.ErrorIs(t, rdb.Do(ctx, "BLPOP", "empty", "0.01").Err(), redis.Nil)
	assert.ErrorIs(t, rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "$"}, Block: 10 * time.Millisecond}).Err(), redis.Nil)
	name, err := rdb.ClientGetName(ctx).Result()
	require.NoError(t, err)
	assert.Equal(t, "goredisbreaker-test", name, "the connection was set up")

	st := statsOf(t, registry, s.addr)
	assert.Equal(t, int64(2), st.Successes, "PING and CLIENT GETNAME alone are judged")
	assert.Zero(t, st.Failures)

	// Even a breaker that drops nearly everything lets them through.
	breakNode(t, registry, s.addr)
	assert.ErrorIs(t, rdb.Do(ctx, "BLPOP", "empty", "0.01").Err(), redis.Nil)
	assert.NoError(t, rdb.Do(ctx, "HELLO", "3").Err())
}

func TestInstrument_canceledIsNeither(t *testing.T) {
	s := newServer(t)
	registry := mockRegistry()
	rdb := instrumented(t, s, registry)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	assert.ErrorIs(t, rdb.Get(ctx, "k").Err(), context.Canceled)
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		return nil
	})
	assert.ErrorIs(t, err, context.Canceled)
	st := statsOf(t, registry, s.addr)
	assert.Zero(t, st.Successes+st.Failures+st.Drops)
}

// A dropped command or pipeline is not sent and takes no connection from
// the pool: no connection is closed or marked bad because of it.
func TestInstrument_dropLeavesPoolHealthy(t *testing.T) {
	s := newServer(t)
	registry := mockRegistry()
	rdb := instrumented(t, s, registry)
	ctx := context.Background()
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	breakNode(t, registry, s.addr)

	before := *rdb.PoolStats()
	drops, sent := 0, 0
	for range 100 {
		err := rdb.Get(ctx, "k").Err()
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			drops++
			continue
		}
		require.NoError(t, err)
		sent++
	}
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		p.Incr(ctx, "n")
		return nil
	})
	if errors.Is(err, breaker.ErrServiceUnavailable) {
		drops++
		for _, cmd := range cmds {
			assert.ErrorIs(t, cmd.Err(), breaker.ErrServiceUnavailable, "each command of a dropped pipeline fails")
		}
	} else {
		require.NoError(t, err)
		sent++
	}
	after := *rdb.PoolStats()

	assert.Greater(t, drops, 50, "the breaker drops most commands")
	assert.Equal(t, sent, int(after.Hits+after.Misses-before.Hits-before.Misses), "only sent commands take a connection")
	assert.Equal(t, before.TotalConns, after.TotalConns)
	assert.Equal(t, before.StaleConns, after.StaleConns)
	assert.Equal(t, before.Unusable, after.Unusable)
	assert.Equal(t, after.TotalConns, after.IdleConns, "every connection is back in the pool")
	require.NoError(t, rdb.Ping(context.Background()).Err(), "the pool's connection still works") // PING may be dropped too
}

func TestInstrument_pipelineFailureInLaterCommand(t *testing.T) {
	s := newServer(t)
	registry := mockRegistry()
	rdb := instrumented(t, s, registry)
	ctx := context.Background()

	// A miss, then a reply that is an answer: the pipeline succeeds.
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "missing")
		p.Set(ctx, "k", "v", 0)
		return nil
	})
	assert.ErrorIs(t, err, redis.Nil)
	st := statsOf(t, registry, s.addr)
	assert.Equal(t, int64(1), st.Successes, "a pipeline is one call")
}

func TestInstrument_invalid(t *testing.T) {
	s := newServer(t)
	var nilClient *redis.Client
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		opts   []goredisbreaker.Option
		want   error
		text   string
	}{
		{"nil", nil, nil, goredisbreaker.ErrUnsupportedClient, "Instrument(<nil>)"},
		{"typed nil", nilClient, nil, goredisbreaker.ErrUnsupportedClient, "Instrument(*redis.Client)"},
		{"nil registry", s.client(), []goredisbreaker.Option{goredisbreaker.WithRegistry(nil)},
			goredisbreaker.ErrInvalidOption, "WithRegistry(nil)"},
		{"nil key", s.client(), []goredisbreaker.Option{goredisbreaker.WithKey(nil)},
			goredisbreaker.ErrInvalidOption, "WithKey(nil)"},
		{"nil acceptable", s.client(), []goredisbreaker.Option{goredisbreaker.WithAcceptable(nil)},
			goredisbreaker.ErrInvalidOption, "WithAcceptable(nil)"},
		{"nil option", s.client(), []goredisbreaker.Option{nil}, goredisbreaker.ErrInvalidOption, "a nil Option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := goredisbreaker.Instrument(tc.client, tc.opts...)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorContains(t, err, tc.text)
		})
	}
	err := goredisbreaker.Instrument(s.client(), goredisbreaker.WithKey(nil))
	assert.EqualError(t, err, "goredisbreaker: invalid option: WithKey(nil): key function must not be nil")
}

func TestInstrument_withKeyAndAcceptable(t *testing.T) {
	s := newServer(t)
	registry := mockRegistry()
	rdb := s.client()
	require.NoError(t, goredisbreaker.Instrument(rdb, goredisbreaker.WithRegistry(registry),
		goredisbreaker.WithKey(func(string) string { return "sessions" }),
		goredisbreaker.WithAcceptable(func(err error) bool { // WRONGTYPE is a failure here
			return goredisbreaker.DefaultAcceptable(err) && !redis.HasErrorPrefix(err, "WRONGTYPE")
		})))
	ctx := context.Background()
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	assert.Error(t, rdb.LPush(ctx, "k", "x").Err())

	st := registry.Get("sessions").Stats()
	assert.Equal(t, int64(1), st.Successes)
	assert.Equal(t, int64(1), st.Failures)
}

// A command through the hook allocates what it allocates on the bare
// client: the hook adds nothing.
func TestInstrument_noExtraAllocation(t *testing.T) {
	s := newServer(t)
	bare, hooked := s.client(), instrumented(t, s, mockRegistry())
	ctx := context.Background()
	require.NoError(t, bare.Set(ctx, "k", "v", 0).Err())
	get := func(rdb *redis.Client) func() {
		return func() { _ = rdb.Get(ctx, "k").Err() }
	}
	get(bare)() // dial and set up a connection on each
	get(hooked)()
	assert.Equal(t, testing.AllocsPerRun(200, get(bare)), testing.AllocsPerRun(200, get(hooked)))
}

// A Ring's shards, made with the ring before Instrument, each get a
// breaker.
func TestInstrument_ring(t *testing.T) {
	a, b := newServer(t), newServer(t)
	registry := mockRegistry()
	rdb := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.addr, "b": b.addr}, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, goredisbreaker.Instrument(rdb, goredisbreaker.WithRegistry(registry)))
	ctx := context.Background()
	for i := range 20 {
		require.NoError(t, rdb.Set(ctx, fmt.Sprint("key-", i), i, 0).Err())
	}
	// The ring's heartbeat may have sent PINGs too.
	sa, sb := statsOf(t, registry, a.addr), statsOf(t, registry, b.addr)
	assert.Positive(t, sa.Successes, "shard a")
	assert.Positive(t, sb.Successes, "shard b")
	assert.GreaterOrEqual(t, sa.Successes+sb.Successes, int64(20))
}
