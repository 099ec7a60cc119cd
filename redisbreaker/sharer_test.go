package redisbreaker_test

import (
	"bytes"
	"context"
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
		redisbreaker.WithClock(clk), redisbreaker.WithPrefix("test:"),
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
	assert.ErrorIs(t, a.sharer.Close(), redisbreaker.ErrClosed, "closing twice")
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
		st, err := a.sharer.Status("payments")
		return err == nil && !st.Synced.IsZero()
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
	long := breaker.MustNew(breaker.WithName(strings.Repeat("x", 1025)))
	assert.LessOrEqual(t, len(long.Name()), breaker.MaxNameLen, "a breaker's name is bounded when it is made")
	assert.NoError(t, s.Share(long), "so every breaker of package breaker fits a key")

	reg := breaker.MustNewRegistry()
	require.NoError(t, s.Share(reg.Get("db")))
	require.NoError(t, s.Share(reg.Get("db")), "sharing again does nothing")
	st, err := s.Status("db")
	require.NoError(t, err)
	assert.Equal(t, redisbreaker.Status{}, st, "no round yet")
	require.NoError(t, s.Unshare("db"))
	require.NoError(t, s.Unshare("never shared"))
	_, err = s.Status("db")
	assert.ErrorIs(t, err, redisbreaker.ErrNotShared)
}

func TestNew_invalidOptions(t *testing.T) {
	srv := startRedis(t)
	for _, tc := range []struct {
		opt  redisbreaker.Option
		want string
	}{
		{redisbreaker.WithPeriod(time.Millisecond), "redisbreaker: invalid option: WithPeriod(1ms): must be from 10ms to 1m0s"},
		{redisbreaker.WithPeriod(time.Hour), "redisbreaker: invalid option: WithPeriod(1h0m0s): must be from 10ms to 1m0s"},
		{redisbreaker.WithTimeout(0), "redisbreaker: invalid option: WithTimeout(0s): must be from 1ms to 1m0s"},
		{redisbreaker.WithTimeout(time.Hour), "redisbreaker: invalid option: WithTimeout(1h0m0s): must be from 1ms to 1m0s"},
		{redisbreaker.WithLogger(nil), "redisbreaker: invalid option: WithLogger(nil): logger must not be nil"},
		{redisbreaker.WithClock(nil), "redisbreaker: invalid option: WithClock(nil): clock must not be nil"},
		{redisbreaker.WithPrefix(strings.Repeat("p", 257)), `redisbreaker: invalid option: WithPrefix("pppppppppppppppppppp"…): at most 256 bytes, got 257`},
		{nil, "redisbreaker: invalid option: option 1 of 1 is nil"},
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
