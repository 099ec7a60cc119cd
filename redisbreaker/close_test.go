package redisbreaker_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// silentServer accepts connections on 127.0.0.1 and never answers: a
// Redis that does not reply. It counts the connections it accepted.
type silentServer struct {
	addr     string
	accepted atomic.Int64
}

func startSilentServer(t *testing.T) *silentServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &silentServer{addr: l.Addr().String()}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { // read what comes, answer nothing
				defer wg.Done()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

// Sync returns by the sharer's timeout, or ctx's deadline when sooner,
// though go-redis would wait for Redis's answer for seconds (its
// ReadTimeout, without ContextTimeoutEnabled); the round after, while
// go-redis still waits, fails at once rather than send more.
func TestSharer_Sync_boundedByItsTimeout(t *testing.T) {
	const timeout = 500 * time.Millisecond
	srv := startSilentServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr, ReadTimeout: 10 * time.Second, MaxRetries: -1})
	clk := newVirtualClock()
	s, err := redisbreaker.New(rdb, redisbreaker.WithClock(clk), redisbreaker.WithTimeout(timeout),
		redisbreaker.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() }) // ends what go-redis still waits on, after Close
	t.Cleanup(func() { _ = s.Close() })
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(clk))
	require.NoError(t, s.Share(b))
	fail(b, 3)

	began := time.Now()
	err = s.Sync(context.Background())
	took := time.Since(began)
	assert.ErrorIs(t, err, redisbreaker.ErrUnreachable)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, 5*time.Second, "WithTimeout(500ms) bounds Sync, not go-redis's ReadTimeout of 10 s")
	assert.GreaterOrEqual(t, took, timeout)

	began = time.Now()
	err = s.Sync(context.Background())
	assert.ErrorIs(t, err, redisbreaker.ErrUnreachable)
	assert.ErrorContains(t, err, "the shard's round before is still waiting on Redis")
	assert.Less(t, time.Since(began), timeout, "nothing sent: no wait")

	// A context with an earlier deadline bounds it sooner; SetOverride and
	// ClearOverride are bounded alike.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	began = time.Now()
	err = s.SetOverride(ctx, "payments", override.Spec{Mode: override.ShedAll, TTL: time.Minute})
	assert.ErrorIs(t, err, redisbreaker.ErrUnreachable)
	assert.Less(t, time.Since(began), timeout, "the context's 10 ms, not the timeout")
	began = time.Now()
	assert.ErrorIs(t, s.ClearOverride(context.Background(), "payments"), redisbreaker.ErrUnreachable)
	took = time.Since(began)
	assert.Less(t, took, 5*time.Second)
	assert.GreaterOrEqual(t, took, timeout)
}

// After Close, every method returns an error wrapping ErrClosed, and none
// of them reaches Redis.
func TestSharer_afterClose(t *testing.T) {
	srv := startSilentServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := redisbreaker.New(rdb, redisbreaker.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	b := breaker.MustNew(breaker.WithName("payments"))
	require.NoError(t, s.Share(b))
	require.NoError(t, s.Close())

	ctx := context.Background()
	override := override.Spec{Mode: override.ShedAll, TTL: time.Minute}
	for _, tc := range []struct {
		method string
		call   func() error
	}{
		{"Share", func() error { return s.Share(breaker.MustNew(breaker.WithName("other"))) }},
		{"Unshare", func() error { return s.Unshare("payments") }},
		{"Start", s.Start},
		{"Sync", func() error { return s.Sync(ctx) }},
		{"SetOverride", func() error { return s.SetOverride(ctx, "payments", override) }},
		{"ClearOverride", func() error { return s.ClearOverride(ctx, "payments") }},
		{"Status", func() error { _, err := s.Status("payments"); return err }},
		{"Close", s.Close},
	} {
		err := tc.call()
		assert.ErrorIs(t, err, redisbreaker.ErrClosed, tc.method)
		assert.EqualError(t, err, "redisbreaker: sharer closed: "+tc.method)
	}
	assert.Zero(t, srv.accepted.Load(), "no method touched Redis")
}

// slowProxy forwards connections on 127.0.0.1 to a Redis, and, once slow
// is set, holds each of Redis's replies for delay before passing it on: a
// Redis that answers every command, slowly. held receives a value when it
// starts holding a reply.
type slowProxy struct {
	addr  string
	delay time.Duration
	slow  atomic.Bool
	held  chan struct{}
}

func startSlowProxy(t *testing.T, redisAddr string, delay time.Duration) *slowProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &slowProxy{addr: l.Addr().String(), delay: delay, held: make(chan struct{}, 1)}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			r, err := net.Dial("tcp", redisAddr)
			if err != nil {
				_ = c.Close()
				continue
			}
			track(c)
			track(r)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(r, c) }()
			go func() { defer wg.Done(); p.replies(c, r) }()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

// replies passes what Redis sends on r to the client on c, each read held
// for the delay while slow is set.
func (p *slowProxy) replies(c, r net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && p.slow.Load() {
			select {
			case p.held <- struct{}{}:
			default:
			}
			<-time.After(p.delay) // Redis's latency, not the test's wait
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Regression (issue 43): Close canceled the round in progress, which then
// took Redis for unreachable and logged it ("Redis unreachable; its
// breakers decide on their own histories", err=context deadline exceeded),
// although Redis answered the round well within the timeout.
func TestSharer_Close_endsItsRoundWithoutAWarning(t *testing.T) {
	srv := startRedis(t)
	proxy := startSlowProxy(t, srv.addr, 200*time.Millisecond)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(context.Background()).Err(), "connected while Redis is fast")

	log := &logBuffer{}
	s, err := redisbreaker.New(rdb, redisbreaker.WithClock(newVirtualClock()), redisbreaker.WithTimeout(5*time.Second),
		redisbreaker.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	require.NoError(t, err)
	b := breaker.MustNew(breaker.WithName("payments"))
	require.NoError(t, s.Share(b))

	proxy.slow.Store(true)
	require.NoError(t, s.Start(), "its first round starts at once")
	<-proxy.held // Redis has answered the round; the answer is on its way
	require.NoError(t, s.Close())
	assert.Zero(t, log.count("unreachable"), "Redis answered the round Close ended:\n%s", log.buf.String())
	assert.Zero(t, log.count("level=WARN"), "nothing to warn of:\n%s", log.buf.String())
}
