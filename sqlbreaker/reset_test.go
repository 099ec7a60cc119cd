package sqlbreaker_test

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// pooled returns a database of one connection on s, made and back in the
// pool, and the calls and outcomes noted so far taken.
func pooled(t *testing.T, s *fakeServer) (*recBreaker, func(ctx context.Context) error) {
	t.Helper()
	db, b := newDB(t, s)
	require.NoError(t, db.Ping())
	s.takeCalls()
	b.take()
	return b, func(ctx context.Context) error {
		var n int
		return db.QueryRowContext(ctx, "q").Scan(&n)
	}
}

// hangOnReset makes s's session resets wait until their context ends, then
// fail with driver.ErrBadConn, as pgx's ping of an idle connection does
// on a server that stopped answering.
func hangOnReset(s *fakeServer) {
	s.setHook(func(ctx context.Context, op string) error {
		if op == "reset" {
			<-ctx.Done()
			return driver.ErrBadConn
		}
		return nil
	})
}

// A reset that waits on a server that stopped answering is a call the
// breaker admitted, out until the caller's deadline, which then counts as
// a failure; the call returns at its deadline.
func TestWrap_sessionReset_hangsUnderTheBreaker(t *testing.T) {
	s := &fakeServer{}
	b, query := pooled(t, s)
	hangOnReset(s)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := query(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, []string{"reset"}, s.takeCalls(), "the query never reached the driver")
	assert.Equal(t, []string{"reject: reset: context deadline exceeded"}, b.take())
	_, closed := s.stats()
	assert.Equal(t, 1, closed, "driver.ErrBadConn: database/sql closed the connection")
}

// The caller's own cancellation during a reset counts neither way.
func TestWrap_sessionReset_callerCancels(t *testing.T) {
	s := &fakeServer{}
	b, query := pooled(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	s.setHook(func(rctx context.Context, op string) error {
		if op == "reset" {
			cancel()
			<-rctx.Done()
			return driver.ErrBadConn
		}
		return nil
	})
	require.ErrorIs(t, query(ctx), context.Canceled)
	assert.Equal(t, []string{"ignore"}, b.take())
}

// A connection the reset finds broken (driver.ErrBadConn, the context
// alive) counts neither way: database/sql takes another, and the call
// there is guarded in turn.
func TestWrap_sessionReset_badConnection(t *testing.T) {
	s := &fakeServer{}
	b, query := pooled(t, s)
	s.setHook(func(_ context.Context, op string) error {
		if op == "reset" {
			return driver.ErrBadConn
		}
		return nil
	})
	require.NoError(t, query(context.Background()))
	assert.Equal(t, []string{"reset", "connect", "query"}, s.takeCalls())
	assert.Equal(t, []string{"ignore", "accept", "accept"}, b.take(), "the reset, then the connect and the query")
}

// Another error of the reset (a hook of the driver's that failed) counts
// as a call's error does; database/sql goes on with the connection, as
// it does without the wrapper.
func TestWrap_sessionReset_otherError(t *testing.T) {
	s := &fakeServer{}
	b, query := pooled(t, s)
	s.setHook(func(_ context.Context, op string) error {
		if op == "reset" {
			return &sqlStateError{"57P01"}
		}
		return nil
	})
	require.NoError(t, query(context.Background()))
	assert.Equal(t, []string{"reset", "query"}, s.takeCalls())
	assert.Equal(t, []string{"reject: reset: fake: SQLSTATE 57P01", "accept"}, b.take())
}

// A dropped reset is the drop of the call it was made for: the driver sees
// neither, the breaker is asked once, and the connection stays in the
// pool. The next call resets the session first.
func TestWrap_sessionReset_dropped(t *testing.T) {
	s := &fakeServer{}
	b, query := pooled(t, s)
	b.setDrop(true)
	err := query(context.Background())
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	assert.NotErrorIs(t, err, driver.ErrBadConn)
	assert.Empty(t, s.takeCalls(), "neither the reset nor the query reached the driver")
	assert.Equal(t, []string{"drop"}, b.take(), "asked once")
	connects, closed := s.stats()
	assert.Equal(t, 1, connects)
	assert.Equal(t, 0, closed, "the connection stays in the pool")

	b.setDrop(false)
	require.NoError(t, query(context.Background()))
	assert.Equal(t, []string{"reset", "query"}, s.takeCalls())
	assert.Equal(t, []string{reset, "accept"}, b.take())
}

// A sql.Conn taken while the breaker drops: its first call returns the
// reset's drop; a later call, admitted, resets the session first, under
// its own admission.
func TestWrap_sessionReset_droppedForAConn(t *testing.T) {
	ctx := context.Background()
	s := &fakeServer{}
	db, b := newDB(t, s)
	require.NoError(t, db.Ping())
	s.takeCalls()
	b.take()

	b.setDrop(true)
	c, err := db.Conn(ctx)
	require.NoError(t, err, "database/sql hands the connection out whatever error but driver.ErrBadConn a reset returns")
	defer c.Close()
	_, err = c.ExecContext(ctx, "x")
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	assert.Equal(t, []string{"drop"}, b.take(), "the reset's drop, the call's")
	b.setDrop(false)
	_, err = c.ExecContext(ctx, "x")
	require.NoError(t, err)
	assert.Equal(t, []string{"reset", "exec"}, s.takeCalls(), "reset before the first call admitted")
	assert.Equal(t, []string{"accept"}, b.take(), "one call: the reset and the exec")
	_, err = c.ExecContext(ctx, "x")
	require.NoError(t, err)
	assert.Equal(t, []string{"exec"}, s.takeCalls(), "reset once")
	assert.Equal(t, []string{"accept"}, b.take())

	// The pending reset finds the connection broken: the call returns
	// driver.ErrBadConn without reaching the driver, and counts neither way.
	require.NoError(t, c.Close())
	b.setDrop(true)
	c2, err := db.Conn(ctx)
	require.NoError(t, err)
	defer c2.Close()
	require.ErrorIs(t, c2.PingContext(ctx), breaker.ErrServiceUnavailable)
	b.setDrop(false)
	s.setHook(func(_ context.Context, op string) error {
		if op == "reset" {
			return driver.ErrBadConn
		}
		return nil
	})
	_, err = c2.ExecContext(ctx, "x")
	require.ErrorIs(t, err, driver.ErrBadConn)
	assert.Equal(t, []string{"reset"}, s.takeCalls())
	assert.Equal(t, []string{"drop", "ignore"}, b.take())
}

// A driver whose connections reset but do not ping: database/sql's Ping
// returns nil, unless the reset before it was dropped.
func TestWrap_sessionReset_droppedBeforeAPingWithoutPinger(t *testing.T) {
	s := &fakeServer{minimal: true, resetOnly: true}
	db, b := newDB(t, s)
	require.NoError(t, db.Ping())
	require.NoError(t, db.Ping())
	assert.Equal(t, []string{"connect", "reset"}, s.takeCalls())
	assert.Equal(t, []string{"accept", reset}, b.take())
	b.setDrop(true)
	require.ErrorIs(t, db.Ping(), breaker.ErrServiceUnavailable)
	assert.Empty(t, s.takeCalls())
	assert.Equal(t, []string{"drop"}, b.take())
}

// A panic in the driver's reset is a failure, raised again.
func TestWrap_sessionReset_panics(t *testing.T) {
	s := &fakeServer{}
	b, query := pooled(t, s)
	s.setHook(func(_ context.Context, op string) error {
		if op == "reset" {
			panic("boom")
		}
		return nil
	})
	v := func() (v any) {
		defer func() { v = recover() }()
		_ = query(context.Background())
		return nil
	}()
	assert.Equal(t, "boom", v)
	assert.Equal(t, []string{"reject: panic: boom"}, b.take())
}
