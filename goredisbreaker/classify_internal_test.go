package goredisbreaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

func TestExempt(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want bool
	}{
		{[]any{"hello", "3"}, true},
		{[]any{"AUTH", "user", "secret"}, true},
		{[]any{"select", 1}, true},
		{[]any{"readonly"}, true},
		{[]any{"client", "setname", "app"}, true},
		{[]any{"CLIENT", "SETINFO", "LIB-NAME", "go-redis"}, true},
		{[]any{"client", "maint_notifications", "on"}, true},
		{[]any{"client", "list"}, false},
		{[]any{"client"}, false},
		{[]any{"blpop", "q", 1}, true},
		{[]any{"BRPOPLPUSH", "a", "b", 0}, true},
		{[]any{"blmove", "a", "b", "left", "right", 0}, true},
		{[]any{"bzpopmin", "z", 0}, true},
		{[]any{"wait", 1, 0}, true},
		{[]any{"subscribe", "c"}, true},
		{[]any{"xread", "count", 1, "block", int64(0), "streams", "s", "$"}, true},
		{[]any{"xread", "count", 1, "streams", "block", "0"}, false}, // a stream named block
		{[]any{"xreadgroup", "group", "g", "c", "block", int64(5), "streams", "s", ">"}, true},
		{[]any{"xreadgroup", "group", "g", "c", "streams", "s", ">"}, false},
		{[]any{"get", "k"}, false},
		{[]any{"SET", "k", "v"}, false},
		{[]any{"ping"}, false},
		{[]any{"selectx"}, false},
		{[]any{"a-name-longer-than-any-exempt"}, false},
		{[]any{42}, false},
		{nil, false},
	} {
		t.Run(fmt.Sprint(tc.args...), func(t *testing.T) {
			assert.Equal(t, tc.want, exempt(tc.args))
		})
	}
}

func TestExempt_noAllocation(t *testing.T) {
	get, blpop := []any{"GET", "k"}, []any{"BLPOP", "q", 0}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = exempt(get), exempt(blpop) }))
}

// replyError is an error reply of a server, as go-redis makes them.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestDefaultAcceptable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{redis.Nil, true},
		{fmt.Errorf("cache: %w", redis.Nil), true},
		{replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), true},
		{replyError("NOSCRIPT No matching script"), true},
		{replyError("ERR syntax error"), true},
		{replyError("MOVED 3999 127.0.0.1:6381"), true},
		{replyError("BUSYGROUP Consumer Group name already exists"), true},
		{redis.TxFailedErr, true},
		{replyError("LOADING Redis is loading the dataset in memory"), false},
		{replyError("BUSY Redis is busy running a script"), false},
		{replyError("MASTERDOWN Link with MASTER is down"), false},
		{replyError("CLUSTERDOWN The cluster is down"), false},
		{replyError("TRYAGAIN Multiple keys request during rehashing of slot"), false},
		{replyError("READONLY You can't write against a read only replica."), false},
		{replyError("NOREPLICAS Not enough good replicas to write."), false},
		{replyError("MISCONF Redis is configured to save RDB snapshots"), false},
		{replyError("OOM command not allowed when used memory > 'maxmemory'."), false},
		{replyError("ERR max number of clients reached"), false},
		{replyError("ERR LOADING kvrocks is restoring the db from backup"), false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
		{io.EOF, false},
		{redis.ErrPoolTimeout, false},
		{context.DeadlineExceeded, false},
	} {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			assert.Equal(t, tc.want, DefaultAcceptable(tc.err))
		})
	}
}

// fakePromise records what a promise was told.
type fakePromise struct{ told string }

func (p *fakePromise) Accept()         { p.told = "accept" }
func (p *fakePromise) Reject(r string) { p.told = "reject: " + r }
func (p *fakePromise) Ignore()         { p.told = "ignore" }

func TestRecord(t *testing.T) {
	o, err := newOptions(nil)
	require.NoError(t, err)
	live := context.Background()
	canceled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel := context.WithDeadline(live, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cancel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}

	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"ok", live, nil, "accept"},
		{"miss", live, redis.Nil, "accept"},
		{"reply", live, replyError("WRONGTYPE x"), "accept"},
		{"loading", live, replyError("LOADING x"), "reject: LOADING x"},
		{"refused", live, refused, "reject: dial tcp: connection refused"},
		{"canceled by the caller", canceled, context.Canceled, "ignore"},
		{"failed, then the caller canceled", canceled, io.EOF, "ignore"},
		{"canceled below", live, fmt.Errorf("hook: %w", context.Canceled), "ignore"},
		{"client closed", live, redis.ErrClosed, "ignore"},
		{"the caller's deadline passed", expired, context.DeadlineExceeded, "reject: context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p fakePromise
			o.record(tc.ctx, nopNamer{}, &p, tc.err)
			assert.Equal(t, tc.want, p.told)
		})
	}
}

func TestRecordPipeline(t *testing.T) {
	o, err := newOptions(nil)
	require.NoError(t, err)
	ctx := context.Background()
	cmd := func(err error) redis.Cmder {
		c := redis.NewStringCmd(ctx, "get", "k")
		c.SetErr(err)
		return c
	}
	for _, tc := range []struct {
		name string
		err  error
		cmds []redis.Cmder
		want string
	}{
		{"ok", nil, []redis.Cmder{cmd(nil), cmd(nil)}, "accept"},
		{"a miss", redis.Nil, []redis.Cmder{cmd(redis.Nil), cmd(nil)}, "accept"},
		{"a miss, then loading", redis.Nil, []redis.Cmder{cmd(redis.Nil), cmd(replyError("LOADING x"))}, "reject: LOADING x"},
		{"broken", io.EOF, []redis.Cmder{cmd(io.EOF), cmd(io.EOF)}, "reject: EOF"},
		{"canceled", context.Canceled, []redis.Cmder{cmd(context.Canceled)}, "ignore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p fakePromise
			o.recordPipeline(ctx, nopNamer{}, &p, tc.err, tc.cmds)
			assert.Equal(t, tc.want, p.told)
		})
	}
}

// A panic below the hook is recorded as a failure and goes on.
func TestProcessHook_panic(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock))
	o, err := newOptions([]Option{WithRegistry(registry)})
	require.NoError(t, err)
	h := &hook{o: o, key: "node"}
	process := h.ProcessHook(func(context.Context, redis.Cmder) error { panic("boom") })
	assert.PanicsWithValue(t, "boom", func() { _ = process(context.Background(), redis.NewCmd(context.Background(), "get", "k")) })
	pipeline := h.ProcessPipelineHook(func(context.Context, []redis.Cmder) error { panic("boom") })
	assert.PanicsWithValue(t, "boom", func() {
		_ = pipeline(context.Background(), []redis.Cmder{redis.NewCmd(context.Background(), "get", "k")})
	})
	s := registry.Get("node").Stats()
	assert.Equal(t, int64(2), s.Failures)
	require.NotEmpty(t, s.Reasons)
	assert.Equal(t, panicReason, s.Reasons[len(s.Reasons)-1].Text)
}

// The hook adds no allocation to a command's path, admitted or dropped.
func TestProcessHook_noAllocation(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock))
	o, err := newOptions([]Option{WithRegistry(registry)})
	require.NoError(t, err)
	ctx := context.Background()
	cmd := redis.NewStringCmd(ctx, "get", "k")
	ok := (&hook{o: o, key: "ok"}).ProcessHook(func(context.Context, redis.Cmder) error { return nil })
	miss := (&hook{o: o, key: "miss"}).ProcessHook(func(context.Context, redis.Cmder) error { return redis.Nil })
	down := (&hook{o: o, key: "down"}).ProcessHook(func(context.Context, redis.Cmder) error { return io.EOF })
	cmds := []redis.Cmder{cmd, cmd}
	pipe := (&hook{o: o, key: "ok"}).ProcessPipelineHook(func(context.Context, []redis.Cmder) error { return nil })
	for range 200 { // the down node's breaker drops nearly every call from here on
		_ = down(ctx, cmd)
	}
	assert.Zero(t, testing.AllocsPerRun(200, func() { _ = ok(ctx, cmd) }), "admitted, succeeded")
	assert.Zero(t, testing.AllocsPerRun(200, func() { _ = miss(ctx, cmd) }), "admitted, a miss")
	assert.Zero(t, testing.AllocsPerRun(200, func() { _ = pipe(ctx, cmds) }), "a pipeline")
	allocs := testing.AllocsPerRun(200, func() {
		if err := down(ctx, cmd); !errors.Is(err, breaker.ErrServiceUnavailable) {
			_ = err // admitted: Reject's reason is the error's text
		}
	})
	assert.Less(t, allocs, 0.5, "dropped")
}

// nopNamer is a breaker's name for record's chain.Mark, which these tests'
// contexts do not hold.
type nopNamer struct{}

func (nopNamer) Name() string { return "test" }
