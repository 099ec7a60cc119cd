//go:build unix

package faulttest

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/goredisbreaker"
)

// go-redis reads a command's reply with no regard for its context being
// done: a client's timeout is its ReadTimeout, in real time. Here the
// client has none (-1), reads the deadline of the call's context
// (ContextTimeoutEnabled), and that context says a deadline far in the
// future that names the call: the connection, told that deadline, watches
// the call's context instead, and ends its read when the call's virtual
// deadline passes, as a ReadTimeout would.

// markBase is the deadline of call 0; call id's is id ns later.
var markBase = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// markedCtx is a call's context, whose deadline names the call.
type markedCtx struct {
	context.Context
	id int
}

func (c markedCtx) Deadline() (time.Time, bool) { return markBase.Add(time.Duration(c.id)), true }

// markedConn is a connection that reads a call's deadline as a watch on
// its context.
type markedConn struct {
	net.Conn
	h *harness

	mu   sync.Mutex
	stop func() bool // guarded by mu; stops the watch of the latest call
}

func (c *markedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.watch(t)) }
func (c *markedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.watch(t)) }
func (c *markedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.watch(t)) }

// SyscallConn passes the connection's own on, with which go-redis checks
// that a pooled connection is still open before it hands it out.
func (c *markedConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// watch returns the deadline to set for t: none for a call's mark, whose
// context it watches instead, t itself otherwise.
func (c *markedConn) watch(t time.Time) time.Time {
	id := int(t.Sub(markBase))
	if t.Before(markBase) || id > 1<<30 {
		return t
	}
	call := c.h.get(id)
	if call == nil {
		return t
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.stop()
	}
	c.stop = context.AfterFunc(call.ctx, func() { _ = c.Conn.SetDeadline(time.Now()) })
	return time.Time{}
}

// hookRedis tells the harness when a command is let through and holds the
// reply of the test's GET until the call's virtual release. It runs inside
// goredisbreaker's hook.
type hookRedis struct{ h *harness }

func (k hookRedis) DialHook(next redis.DialHook) redis.DialHook { return next }

func (k hookRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		id := callID(ctx)
		k.h.admit(id) // the GET, or the setup of the connection it waits for
		err := next(ctx, cmd)
		if cmd.Name() == "get" {
			k.h.answer(ctx, id)
		}
		return err
	}
}

func (k hookRedis) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestInstrument_faults: goredisbreaker's hook on a client of a
// redis-server behind the proxy.
func TestInstrument_faults(t *testing.T) {
	addr, err := redisAddr()
	require.NoError(t, err)
	seed := redis.NewClient(&redis.Options{Addr: addr})
	require.NoError(t, seed.Set(context.Background(), "answer", answerBody, 0).Err())
	require.NoError(t, seed.Close())

	runFaults(t, func(t *testing.T, h *harness) (integration, *proxy) {
		p := newProxy(t, addr)
		c := redis.NewClient(&redis.Options{
			Addr: p.addr(),
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := (&net.Dialer{Timeout: time.Minute}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &markedConn{Conn: conn, h: h}, nil
			},
			ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: true,
			MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
			PoolSize: 1000, PoolTimeout: time.Minute,
		})
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, goredisbreaker.Instrument(c, goredisbreaker.WithRegistry(h.reg)))
		c.AddHook(hookRedis{h})
		return integration{do: func(ctx context.Context, id int) error {
			v, err := c.Get(markedCtx{ctx, id}, "answer").Result()
			if err != nil {
				if !closed(h.get(id).admitted) && !errors.Is(err, breaker.ErrServiceUnavailable) {
					return errors.Join(errors.New("failed before it was let through, not dropped"), err)
				}
				return err
			}
			return checkAnswer(v)
		}}, p
	})
}
