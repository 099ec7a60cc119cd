package redisbreaker_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// span is a bucket of a default breaker: its history holds the buckets
// that finished.
const span = breaker.DefaultWindow / 20

// defaultTestTimeout bounds each Redis operation of a test.
const defaultTestTimeout = 5 * time.Second

func TestMain(m *testing.M) {
	// A cluster client reloads its slot map, and dials a node that is
	// down, in goroutines of its own that outlive its Close for a moment;
	// go-redis's clock cache runs until its last client closes, and from
	// the start when a run makes none.
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*clusterStateHolder).LazyReload.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.startGlobalTimeCache.func1"))
}

var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// virtualClock is a clock the test moves by hand, without the pause of
// clock.Mock's Add on every step; the sharer also gets clock.Mock's Ticker
// through it, which the tests that start the loop move with Add.
type virtualClock struct {
	*clock.Mock
	mu  sync.Mutex
	now time.Time
}

func newVirtualClock() *virtualClock {
	m := clock.NewMock()
	m.Set(start)
	return &virtualClock{Mock: m, now: start}
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// logBuffer collects what a sharer logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// process is one process of a fleet: a breaker and its sharer.
type process struct {
	b      breaker.Breaker
	sharer *redisbreaker.Sharer
	log    *logBuffer
}

func newProcess(t testing.TB, srv *redisServer, clk *virtualClock, id string, opts ...redisbreaker.Option) *process {
	t.Helper()
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(clk), breaker.WithProba(proba.NewSeeded(uint64(len(id)))))
	log := &logBuffer{}
	s, err := redisbreaker.New(srv.client(), append([]redisbreaker.Option{
		redisbreaker.WithClock(clk), redisbreaker.WithProcessID(id), redisbreaker.WithPrefix("test:"),
		redisbreaker.WithLogger(slog.New(slog.NewTextHandler(log, nil))),
	}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, s.Share(b))
	t.Cleanup(func() { _ = s.Close() })
	return &process{b: b, sharer: s, log: log}
}

func (p *process) sync(t testing.TB) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), defaultTestTimeout)
	defer cancel()
	return p.sharer.Sync(ctx)
}

func dropProbability(t testing.TB, b breaker.Breaker) float64 {
	t.Helper()
	s := b.Stats()
	return s.DropProbability
}

// fail records n failed calls, of those the breaker admits.
func fail(b breaker.Breaker, n int) {
	for range n {
		if p, err := b.Allow(); err == nil {
			p.Reject("connection refused")
		}
	}
}

// sharedOutage starts processes a and b on srv: b's calls fail, and a,
// having synced after b, sheds on b's counts.
func sharedOutage(t *testing.T, srv *redisServer, opts ...redisbreaker.Option) (*virtualClock, *process, *process) {
	t.Helper()
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a", opts...)
	b := newProcess(t, srv, clk, "b", opts...)
	fail(b.b, 30)
	clk.advance(span)
	require.NoError(t, b.sync(t))
	require.NoError(t, a.sync(t))
	require.Greater(t, dropProbability(t, a.b), 0.5)
	return clk, a, b
}

func TestSharer_Sync_theFleetsCountsReachEveryProcess(t *testing.T) {
	srv := startRedis(t)
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a")
	b := newProcess(t, srv, clk, "b")

	fail(a.b, 2) // too few to shed on alone
	fail(b.b, 3)
	clk.advance(span) // the bucket finishes: the breakers publish it
	assert.Equal(t, 0.0, dropProbability(t, a.b))
	require.NoError(t, a.sync(t))
	require.NoError(t, b.sync(t))
	require.NoError(t, a.sync(t))
	// (5 − 5) / 6: the fleet holds exactly protection's worth of failures.
	assert.Equal(t, 0.0, dropProbability(t, a.b))

	fail(b.b, 10)
	clk.advance(span)
	require.NoError(t, b.sync(t))
	require.NoError(t, a.sync(t))
	assert.Greater(t, dropProbability(t, a.b), 0.5, "a sheds on the fleet's 15 failures")
	assert.Zero(t, a.log.count("level="), "nothing to log")
}

func TestSharer_Sync_redisKilledAndRestarted(t *testing.T) {
	srv := startRedis(t)
	_, a, b := sharedOutage(t, srv)

	srv.stop()
	for range 3 {
		err := a.sync(t)
		assert.ErrorIs(t, err, redisbreaker.ErrUnreachable, "%v", err)
	}
	assert.Equal(t, 0.0, dropProbability(t, a.b), "a falls back to its own counts at once")
	assert.Equal(t, 1, a.log.count("level=WARN msg=\"redisbreaker: Redis unreachable"), "logged once:\n%s", &a.log.buf)
	p, err := a.b.Allow()
	require.NoError(t, err, "calls go on while Redis is down")
	p.Accept()

	srv.start()
	var syncErr error
	for range 3 { // a pooled connection to the killed server fails once at most
		if syncErr = a.sync(t); syncErr == nil {
			break
		}
	}
	require.NoError(t, syncErr, "the sharer reconnects by itself")
	assert.Equal(t, 1, a.log.count("msg=\"redisbreaker: Redis reachable again"), "recovery logged once")
	// The restarted server kept nothing: b finds its counters gone in its
	// first round, and adds its window again in the next.
	require.NoError(t, b.sync(t))
	require.NoError(t, b.sync(t))
	require.NoError(t, a.sync(t))
	assert.Greater(t, dropProbability(t, a.b), 0.5, "a decides on the fleet's counts again")
}

func TestSharer_Sync_staleCountsAreLeftOutThenDeleted(t *testing.T) {
	srv := startRedis(t)
	clk, a, _ := sharedOutage(t, srv, redisbreaker.WithV3(true))

	ctx := context.Background()
	ttl, err := srv.client().PTTL(ctx, "test:payments").Result()
	require.NoError(t, err)
	assert.InDelta(t, (2*breaker.DefaultWindow + redisbreaker.DefaultPeriod).Seconds(), ttl.Seconds(), 0.5, "the key expires on its own")

	clk.advance(breaker.DefaultWindow + time.Millisecond) // b stops publishing
	require.NoError(t, a.sync(t))
	assert.Equal(t, 0.0, dropProbability(t, a.b), "b's history is stale after a window")
	for _, field := range []string{"b", "=3 b"} {
		exists, err := srv.client().HExists(ctx, "test:payments", field).Result()
		require.NoError(t, err)
		assert.False(t, exists, "a stopped process's fields are deleted: %q", field)
	}
}

func TestSharer_Sync_unusableData(t *testing.T) {
	srv := startRedis(t)
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a", redisbreaker.WithV3(true))
	ctx := context.Background()
	rdb := srv.client()

	t.Run("malformed values are left out", func(t *testing.T) {
		b := newProcess(t, srv, clk, "b", redisbreaker.WithV3(true))
		fail(b.b, 30)
		clk.advance(span)
		require.NoError(t, b.sync(t))
		for _, tc := range []struct{ field, value string }{
			{"c", "1 garbage"},
			{"=3 c", "garbage"},
			{"=3 c", "1704067200000 \x07"},
			{"=3 c", "1704067200000 \x01\x80\xad\xe2\x04\x0a\x00\x00\x00\x00"}, // 10 ms buckets, 10 to a window
		} {
			require.NoError(t, rdb.HSet(ctx, "test:payments", tc.field, tc.value).Err())
			// Values are read as stale ones are swept: once a quarter
			// window, or at once without "=hswept".
			require.NoError(t, rdb.HDel(ctx, "test:payments", "=hswept").Err())
			err := a.sync(t)
			assert.ErrorIs(t, err, redisbreaker.ErrBadData)
			assert.ErrorContains(t, err, fmt.Sprintf("values of other processes could not be used: 1 of them, the first in field %q", tc.field))
			assert.Greater(t, dropProbability(t, a.b), 0.5, "b's history still counts")
			require.NoError(t, a.sync(t), "no sweep: nothing read")
			require.NoError(t, rdb.HDel(ctx, "test:payments", tc.field).Err())
			require.NoError(t, b.sync(t))
		}
		assert.Equal(t, 1, a.log.count("unusable data in Redis"), "logged once")
		require.NoError(t, rdb.HDel(ctx, "test:payments", "=hswept").Err())
		require.NoError(t, a.sync(t))
		assert.Equal(t, 1, a.log.count("data in Redis usable again"))
	})
	t.Run("a key of another type", func(t *testing.T) {
		other := breaker.MustNew(breaker.WithName("other"), breaker.WithClock(clk))
		require.NoError(t, a.sharer.Share(other))
		require.NoError(t, rdb.Set(ctx, "test:other", "a string", 0).Err())
		err := a.sync(t)
		assert.ErrorIs(t, err, redisbreaker.ErrBadData)
		assert.ErrorContains(t, err, "WRONGTYPE")
		assert.Greater(t, dropProbability(t, a.b), 0.5, "the other breaker still shares")
	})
}

func TestSharer_Sync_scriptFlushed(t *testing.T) {
	srv := startRedis(t)
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a", redisbreaker.WithV3(true))
	b := newProcess(t, srv, clk, "b", redisbreaker.WithV3(true))
	fail(b.b, 30)
	clk.advance(span)
	require.NoError(t, b.sync(t))
	require.NoError(t, a.sync(t))
	require.NoError(t, srv.client().ScriptFlush(context.Background()).Err())
	require.NoError(t, a.sync(t), "the script is sent whole again")
	assert.Greater(t, dropProbability(t, a.b), 0.5)
}

func TestSharer_StartClose(t *testing.T) {
	srv := startRedis(t)
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a")
	b := newProcess(t, srv, clk, "b")
	fail(b.b, 30)
	clk.advance(span)
	require.NoError(t, b.sync(t))

	require.NoError(t, a.sharer.Start())
	assert.EqualError(t, a.sharer.Start(), "redisbreaker: Start: the loop is already running")
	// The loop syncs at once; then on every tick of the mock's ticker.
	require.Eventually(t, func() bool { return dropProbability(t, a.b) > 0.5 }, defaultTestTimeout, time.Millisecond)

	require.NoError(t, a.sharer.Close())
	assert.Equal(t, 0.0, dropProbability(t, a.b), "closed: the breaker decides on its own counts")
	assert.NoError(t, a.sharer.Close(), "closing twice does nothing")
	assert.ErrorIs(t, a.sharer.Start(), redisbreaker.ErrClosed)
	assert.ErrorIs(t, a.sharer.Share(b.b), redisbreaker.ErrClosed)
}

func TestSharer_Start_ticksEveryPeriod(t *testing.T) {
	srv := startRedis(t)
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a")
	b := newProcess(t, srv, clk, "b")
	require.NoError(t, a.sharer.Start())
	require.Eventually(t, func() bool { // the first round, at once
		_, ok := a.sharer.Status("payments")
		return ok
	}, defaultTestTimeout, time.Millisecond)
	fail(b.b, 30)
	clk.advance(span)
	require.NoError(t, b.sync(t))
	assert.Equal(t, 0.0, dropProbability(t, a.b), "not read yet")
	clk.Add(redisbreaker.DefaultPeriod) // the ticker runs on the clock.Mock
	require.Eventually(t, func() bool { return dropProbability(t, a.b) > 0.5 }, defaultTestTimeout, time.Millisecond)
}

func TestSharer_Share(t *testing.T) {
	srv := startRedis(t)
	s, err := redisbreaker.New(srv.client())
	require.NoError(t, err)
	defer s.Close()
	assert.ErrorIs(t, s.Share(breaker.Nop()), redisbreaker.ErrNotShareable)
	assert.EqualError(t, s.Share(breaker.MustNew(breaker.WithName(strings.Repeat("x", 1025)))),
		"redisbreaker: breaker name of 1025 bytes: at most 1024")

	reg := breaker.MustNewRegistry()
	require.NoError(t, s.Share(reg.Get("db")))
	require.NoError(t, s.Share(reg.Get("db")), "sharing again does nothing")
	s.Unshare("db")
	s.Unshare("never shared")
	assert.Len(t, s.ProcessID(), 16)
}

func TestNew_invalidOptions(t *testing.T) {
	srv := startRedis(t)
	for _, tc := range []struct {
		opt  redisbreaker.Option
		want string
	}{
		{redisbreaker.WithPeriod(time.Millisecond), "redisbreaker: invalid option: WithPeriod(1ms): must be from 10ms to 1m0s"},
		{redisbreaker.WithPeriod(time.Hour), "redisbreaker: invalid option: WithPeriod(1h0m0s): must be from 10ms to 1m0s"},
		{redisbreaker.WithTimeout(0), "redisbreaker: invalid option: WithTimeout(0s): must be positive"},
		{redisbreaker.WithLogger(nil), "redisbreaker: invalid option: WithLogger(nil): logger must not be nil"},
		{redisbreaker.WithClock(nil), "redisbreaker: invalid option: WithClock(nil): clock must not be nil"},
		{redisbreaker.WithProcessID(""), `redisbreaker: invalid option: WithProcessID(""): must be from 1 to 128 bytes, got 0`},
		{redisbreaker.WithPrefix(strings.Repeat("p", 257)), `redisbreaker: invalid option: WithPrefix("pppppppppppppppppppp"…): at most 256 bytes, got 257`},
		{redisbreaker.WithProcessID("=sum"), `redisbreaker: invalid option: WithProcessID("=sum"): must not start with "=", which marks the sharer's own fields`},
		{nil, "redisbreaker: invalid option: a nil Option was given"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := redisbreaker.New(srv.client(), tc.opt)
			assert.ErrorIs(t, err, redisbreaker.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
		})
	}
	_, err := redisbreaker.New(nil)
	assert.EqualError(t, err, "redisbreaker: invalid option: client must not be nil")
}
