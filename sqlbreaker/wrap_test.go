package sqlbreaker_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

// newDB opens a database of one connection on s, guarded by a recBreaker.
func newDB(t *testing.T, s *fakeServer, opts ...sqlbreaker.Option) (*sql.DB, *recBreaker) {
	t.Helper()
	b := &recBreaker{}
	db := sql.OpenDB(must(sqlbreaker.Wrap(s, append([]sqlbreaker.Option{sqlbreaker.WithBreaker(b)}, opts...)...)))
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db, b
}

// reset is what a recBreaker notes for a session reset that succeeded:
// database/sql resets a connection it takes from the pool, and the
// wrapper asks the breaker first and records the reset as neither.
const reset = "ignore"

// calls returns the calls s saw since the last look, session resets left
// out.
func calls(s *fakeServer) []string {
	return slices.DeleteFunc(s.takeCalls(), func(c string) bool { return c == "reset" })
}

// rawConn runs f on the wrapped driver connection of one of db's
// connections, bypassing database/sql's retries.
func rawConn(t *testing.T, db *sql.DB, f func(dc any)) {
	t.Helper()
	c, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Raw(func(dc any) error { f(dc); return nil }))
}

func TestWrap_recordsEachCall(t *testing.T) {
	ctx := context.Background()
	t.Run("full", func(t *testing.T) {
		s := &fakeServer{}
		db, b := newDB(t, s)

		require.NoError(t, db.PingContext(ctx))
		assert.Equal(t, []string{"connect", "ping"}, calls(s))
		assert.Equal(t, []string{"accept", "accept"}, b.take())

		rows, err := db.QueryContext(ctx, "q")
		require.NoError(t, err)
		require.NoError(t, rows.Close())
		assert.Equal(t, []string{"query"}, calls(s))
		assert.Equal(t, []string{reset, "accept"}, b.take())

		_, err = db.ExecContext(ctx, "x")
		require.NoError(t, err)
		assert.Equal(t, []string{"exec"}, calls(s))
		assert.Equal(t, []string{reset, "accept"}, b.take())

		st, err := db.PrepareContext(ctx, "p")
		require.NoError(t, err)
		var n int
		require.NoError(t, st.QueryRowContext(ctx).Scan(&n))
		_, err = st.ExecContext(ctx)
		require.NoError(t, err)
		require.NoError(t, st.Close())
		assert.Equal(t, []string{"prepare", "stmt.query", "stmt.exec"}, calls(s))
		assert.Equal(t, []string{reset, "accept", reset, "accept", reset, "accept"}, b.take())

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "x")
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		assert.Equal(t, []string{"begin", "exec", "commit"}, calls(s))
		assert.Equal(t, []string{reset, "accept", "accept", "accept"}, b.take(), "reset when the transaction takes the connection")

		tx, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable, ReadOnly: true})
		require.NoError(t, err)
		require.NoError(t, tx.Rollback())
		assert.Equal(t, []string{"begin", "rollback"}, calls(s))
		assert.Equal(t, []string{reset, "accept"}, b.take(), "Rollback is not recorded")
	})

	t.Run("minimal", func(t *testing.T) {
		s := &fakeServer{minimal: true}
		db, b := newDB(t, s)

		require.NoError(t, db.PingContext(ctx))
		assert.Equal(t, []string{"connect"}, calls(s), "no Pinger: nothing to ping")
		assert.Equal(t, []string{"accept"}, b.take())

		var n int
		require.NoError(t, db.QueryRowContext(ctx, "q").Scan(&n))
		assert.Equal(t, []string{"prepare", "stmt.query"}, calls(s), "no Queryer: database/sql prepares")
		assert.Equal(t, []string{"accept", "accept"}, b.take())

		_, err := db.ExecContext(ctx, "x")
		require.NoError(t, err)
		assert.Equal(t, []string{"prepare", "stmt.exec"}, calls(s))
		assert.Equal(t, []string{"accept", "accept"}, b.take())

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		assert.Equal(t, []string{"begin", "commit"}, calls(s))
		assert.Equal(t, []string{"accept", "accept"}, b.take())

		_, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
		require.EqualError(t, err, "sql: driver does not support non-default isolation level")
		_, err = db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		require.EqualError(t, err, "sql: driver does not support read-only transactions")
		assert.Empty(t, calls(s))
		assert.Empty(t, b.take(), "refused before anything is asked")
	})
}

func TestWrap_errSkipFallsBack(t *testing.T) {
	s := &fakeServer{}
	db, b := newDB(t, s)
	var n int
	require.NoError(t, db.QueryRowContext(context.Background(), "skip").Scan(&n))
	_, err := db.ExecContext(context.Background(), "skip")
	require.NoError(t, err)
	assert.Equal(t, []string{"connect", "prepare", "stmt.query", "prepare", "stmt.exec"}, calls(s))
	assert.Equal(t, []string{"accept", "ignore", "accept", "accept", reset, "ignore", "accept", "accept"}, b.take(),
		"connect; ErrSkip neither way; then prepare and the statement, each recorded")
}

func TestWrap_errNoRowsIsSuccess(t *testing.T) {
	s := &fakeServer{}
	db, b := newDB(t, s)
	var n int
	err := db.QueryRowContext(context.Background(), "none").Scan(&n)
	require.ErrorIs(t, err, sql.ErrNoRows)
	assert.Equal(t, []string{"accept", "accept"}, b.take(),
		"connect, and the query, which returned no rows: database/sql makes ErrNoRows of that")

	// The same through a real breaker.
	bb := breaker.MustNew(breaker.WithName("no-rows"))
	db2 := sql.OpenDB(must(sqlbreaker.Wrap(&fakeServer{}, sqlbreaker.WithBreaker(bb))))
	defer db2.Close()
	for range 20 {
		require.ErrorIs(t, db2.QueryRow("none").Scan(&n), sql.ErrNoRows)
	}
	st := bb.Stats()
	assert.Zero(t, st.TotalFailures)
	assert.Equal(t, int64(21), st.TotalSuccesses, "a connect and 20 queries")
}

func TestWrap_classify(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		cancel     bool // the caller cancels during the call
		acceptable func(error) bool
		want       string
	}{
		{name: "success", err: nil, want: "accept"},
		{name: "unique violation", err: &sqlStateError{"23505"}, want: "accept"},
		{name: "wrapped foreign key violation", err: fmt.Errorf("insert: %w", &sqlStateError{"23503"}), want: "accept"},
		{name: "too many connections", err: &sqlStateError{"53300"}, want: "reject: query: fake: SQLSTATE 53300"},
		{name: "statement timeout", err: &sqlStateError{"57014"}, want: "reject: query: fake: SQLSTATE 57014"},
		{name: "admin shutdown", err: &sqlStateError{"57P01"}, want: "reject: query: fake: SQLSTATE 57P01"},
		{name: "syntax error", err: &sqlStateError{"42601"}, want: "reject: query: fake: SQLSTATE 42601"},
		{name: "connection error", err: errors.New("read tcp: connection reset by peer"),
			want: "reject: query: read tcp: connection reset by peer"},
		{name: "bad connection", err: driver.ErrBadConn, want: "ignore"},
		{name: "skip", err: driver.ErrSkip, want: "ignore"},
		{name: "deadline", err: context.DeadlineExceeded, want: "reject: query: context deadline exceeded"},
		{name: "caller canceled", err: context.Canceled, cancel: true, want: "ignore"},
		{name: "canceled, not by the caller", err: context.Canceled, want: "reject: query: context canceled"},
		{name: "no rows from a driver", err: sql.ErrNoRows, want: "accept"},
		{name: "acceptable of the user", err: &sqlStateError{"42601"}, want: "accept",
			acceptable: func(err error) bool {
				return sqlbreaker.DefaultAcceptable(err) || sqlbreaker.SQLStateClass(err) == "42"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &fakeServer{}
			var opts []sqlbreaker.Option
			if tc.acceptable != nil {
				opts = append(opts, sqlbreaker.WithAcceptable(tc.acceptable))
			}
			db, b := newDB(t, s, opts...)
			rawConn(t, db, func(dc any) {
				b.take()
				s.setHook(func(context.Context, string) error {
					if tc.cancel {
						cancel()
					}
					return tc.err
				})
				_, err := dc.(driver.QueryerContext).QueryContext(ctx, "q", nil)
				assert.Equal(t, tc.err, err, "the driver's error, untouched")
				s.setHook(nil)
			})
			assert.Equal(t, []string{tc.want}, b.take())
		})
	}
}

func TestWrap_contextDoneBeforeTheCall(t *testing.T) {
	s := &fakeServer{}
	db, b := newDB(t, s)
	require.NoError(t, db.Ping())
	b.take()
	s.takeCalls()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rawConn(t, db, func(dc any) {
		_, err := dc.(driver.QueryerContext).QueryContext(ctx, "q", nil)
		assert.ErrorIs(t, err, context.Canceled)
		_, err = dc.(driver.ExecerContext).ExecContext(ctx, "x", nil)
		assert.ErrorIs(t, err, context.Canceled)
	})
	assert.Empty(t, calls(s))
	assert.Equal(t, []string{reset}, b.take(), "nothing asked after the checkout's reset, nothing recorded")
}

func TestWrap_callerCancels(t *testing.T) {
	s := &fakeServer{}
	db, b := newDB(t, s)
	require.NoError(t, db.Ping())
	b.take()
	started := make(chan struct{})
	s.setHook(func(ctx context.Context, op string) error {
		if op != "query" {
			return nil
		}
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := db.QueryContext(ctx, "q")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{reset, "ignore"}, b.take())
}

func TestWrap_dropLeavesConnectionInPool(t *testing.T) {
	ctx := context.Background()
	for _, minimal := range []bool{false, true} {
		t.Run(fmt.Sprintf("minimal=%v", minimal), func(t *testing.T) {
			s := &fakeServer{minimal: minimal}
			db, b := newDB(t, s)
			st, err := db.PrepareContext(ctx, "p") // connects
			require.NoError(t, err)
			defer st.Close()
			s.takeCalls()
			b.take()

			b.setDrop(true)
			var n int
			errs := map[string]error{
				"QueryRow.Scan": db.QueryRowContext(ctx, "q").Scan(&n),
				"Stmt.QueryRow": st.QueryRowContext(ctx).Scan(&n),
			}
			_, errs["Exec"] = db.ExecContext(ctx, "x")
			_, errs["Prepare"] = db.PrepareContext(ctx, "p2")
			_, errs["Stmt.Exec"] = st.ExecContext(ctx)
			_, errs["Begin"] = db.BeginTx(ctx, nil)
			if !minimal {
				errs["Ping"] = db.PingContext(ctx)
			}
			for op, err := range errs {
				assert.ErrorIs(t, err, breaker.ErrServiceUnavailable, op)
				assert.NotErrorIs(t, err, driver.ErrBadConn, op)
			}
			assert.Empty(t, calls(s), "no dropped call reaches the driver")
			connects, closed := s.stats()
			assert.Equal(t, 1, connects)
			assert.Equal(t, 0, closed, "the connection stays in the pool")
			assert.Equal(t, 1, db.Stats().OpenConnections)

			b.setDrop(false)
			require.NoError(t, db.QueryRowContext(ctx, "q").Scan(&n))
			connects, closed = s.stats()
			assert.Equal(t, 1, connects, "the same connection serves the next call")
			assert.Equal(t, 0, closed)
		})
	}
}

func TestWrap_dropConnect(t *testing.T) {
	s := &fakeServer{}
	db, b := newDB(t, s)
	b.setDrop(true)
	err := db.Ping()
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	assert.Empty(t, s.takeCalls(), "nothing dialed")
	assert.Equal(t, []string{"drop"}, b.take(), "asked once: no retry")
	assert.Equal(t, 0, db.Stats().OpenConnections)
}

func TestWrap_connectFailures(t *testing.T) {
	s := &fakeServer{}
	db, b := newDB(t, s)
	s.setHook(func(_ context.Context, op string) error {
		if op == "connect" {
			return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
		}
		return nil
	})
	require.Error(t, db.Ping())
	assert.Equal(t, []string{"reject: connect: dial tcp 127.0.0.1:5432: connect: connection refused"}, b.take())

	s.setHook(func(_ context.Context, op string) error {
		if op == "connect" {
			return driver.ErrBadConn
		}
		return nil
	})
	require.ErrorIs(t, db.Ping(), driver.ErrBadConn)
	for _, o := range b.take() {
		assert.Equal(t, "reject: connect: driver: bad connection", o, "a failed connect is a failure, ErrBadConn too")
	}
}

func TestWrap_dropCommitRollsBack(t *testing.T) {
	ctx := context.Background()
	s := &fakeServer{}
	db, b := newDB(t, s)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "x")
	require.NoError(t, err)
	b.setDrop(true)
	err = tx.Commit()
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	assert.NotErrorIs(t, err, driver.ErrBadConn)
	assert.Equal(t, []string{"connect", "begin", "exec", "rollback"}, calls(s), "rolled back, not committed")

	b.setDrop(false)
	tx, err = db.BeginTx(ctx, nil) // the fake refuses a second transaction on a connection
	require.NoError(t, err, "the connection has no transaction left open")
	require.NoError(t, tx.Commit())
	connects, closed := s.stats()
	assert.Equal(t, 1, connects)
	assert.Equal(t, 0, closed)

	// A rollback that fails too: database/sql is told to close the connection.
	tx, err = db.BeginTx(ctx, nil)
	require.NoError(t, err)
	b.setDrop(true)
	s.setHook(func(_ context.Context, op string) error {
		if op == "rollback" {
			return errors.New("write: broken pipe")
		}
		return nil
	})
	err = tx.Commit()
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	require.ErrorIs(t, err, driver.ErrBadConn)
	assert.Contains(t, err.Error(), "broken pipe")
	_, closed = s.stats()
	assert.Equal(t, 1, closed)
}

func TestWrap_panics(t *testing.T) {
	s := &fakeServer{}
	db, b := newDB(t, s)
	require.NoError(t, db.Ping())
	b.take()

	s.setHook(func(_ context.Context, op string) error {
		if op == "query" {
			panic("boom")
		}
		return nil
	})
	v := func() (v any) {
		defer func() { v = recover() }()
		rawConn(t, db, func(dc any) { _, _ = dc.(driver.QueryerContext).QueryContext(context.Background(), "q", nil) })
		return nil
	}()
	assert.Equal(t, "boom", v, "raised again with the same value")
	assert.Equal(t, []string{reset, "reject: panic: boom"}, b.take())

	s.setHook(func(_ context.Context, op string) error {
		if op == "exec" {
			runtime.Goexit()
		}
		return nil
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := db.Conn(context.Background())
		if err != nil {
			return
		}
		_ = c.Raw(func(dc any) error {
			_, _ = dc.(driver.ExecerContext).ExecContext(context.Background(), "x", nil)
			return nil
		})
	}()
	wg.Wait()
	assert.Equal(t, []string{"accept", // a new connection: database/sql closed the one that panicked
		"reject: call exited without returning (runtime.Goexit, or panic(nil) with GODEBUG panicnil=1)"},
		b.take())

	s.setHook(func(_ context.Context, op string) error {
		if op == "ping" {
			return errors.New("fails")
		}
		return nil
	})
	db2, b2 := newDB(t, s, sqlbreaker.WithAcceptable(func(error) bool { panic("acceptable") }))
	v = func() (v any) {
		defer func() { v = recover() }()
		_ = db2.Ping()
		return nil
	}()
	assert.Equal(t, "acceptable", v)
	assert.Equal(t, []string{"accept", "reject: panic: acceptable"}, b2.take(),
		"a nil error is a success without asking acceptable")
}

func TestWrap_interfaces(t *testing.T) {
	s := &fakeServer{}
	db, b := newDB(t, s)
	rawConn(t, db, func(dc any) {
		for name, ok := range map[string]bool{
			"QueryerContext":     is[driver.QueryerContext](dc),
			"ExecerContext":      is[driver.ExecerContext](dc),
			"ConnPrepareContext": is[driver.ConnPrepareContext](dc),
			"ConnBeginTx":        is[driver.ConnBeginTx](dc),
			"Pinger":             is[driver.Pinger](dc),
			"SessionResetter":    is[driver.SessionResetter](dc),
			"Validator":          is[driver.Validator](dc),
			"NamedValueChecker":  is[driver.NamedValueChecker](dc),
		} {
			assert.True(t, ok, name)
		}
		assert.IsType(t, &fullConn{}, sqlbreaker.Unwrap(dc))
	})

	s = &fakeServer{minimal: true}
	db, b = newDB(t, s)
	rawConn(t, db, func(dc any) {
		assert.False(t, is[driver.SessionResetter](dc), "SessionResetter only when the driver's has it")
		assert.False(t, is[driver.Validator](dc), "Validator only when the driver's has it")
		b.take()
		_, err := dc.(driver.QueryerContext).QueryContext(context.Background(), "q", nil)
		assert.Same(t, driver.ErrSkip, err)
		_, err = dc.(driver.ExecerContext).ExecContext(context.Background(), "x", nil)
		assert.Same(t, driver.ErrSkip, err)
		assert.Same(t, driver.ErrSkip, dc.(driver.NamedValueChecker).CheckNamedValue(&driver.NamedValue{Value: 1}))
		assert.NoError(t, dc.(driver.Pinger).Ping(context.Background()))
		assert.Empty(t, b.take(), "nothing asked")
		assert.IsType(t, &minimalConn{}, sqlbreaker.Unwrap(dc))
	})
	assert.Equal(t, "x", sqlbreaker.Unwrap("x"), "not a wrapped connection: itself")
}

func is[T any](v any) bool {
	_, ok := v.(T)
	return ok
}

func TestWrap_sessionResetAndValidator(t *testing.T) {
	s := &fakeServer{}
	db, _ := newDB(t, s)
	require.NoError(t, db.Ping())
	require.NoError(t, db.Ping())
	assert.Equal(t, []string{"connect", "ping", "reset", "ping"}, s.takeCalls(), "the session is reset before reuse")

	s.mu.Lock()
	s.invalid = true
	s.mu.Unlock()
	require.NoError(t, db.Ping())
	connects, closed := s.stats()
	assert.Equal(t, 1, connects)
	assert.Equal(t, 1, closed, "IsValid false: database/sql closed the connection")
}

func TestWrap_namedValueChecker(t *testing.T) {
	ctx := context.Background()
	s := &fakeServer{}
	db, _ := newDB(t, s)
	_, err := db.ExecContext(ctx, "x", point{1, 2})
	require.NoError(t, err, "the connection's checker converts a point")
	st, err := db.PrepareContext(ctx, "p")
	require.NoError(t, err)
	defer st.Close()
	_, err = st.ExecContext(ctx, point{1, 2})
	require.NoError(t, err, "a statement without a checker of its own uses its connection's")
	_, err = st.ExecContext(ctx, 3, "a", nil)
	require.NoError(t, err, "ErrSkip: the default conversion")

	s = &fakeServer{minimal: true}
	db, _ = newDB(t, s)
	_, err = db.ExecContext(ctx, "x", point{1, 2})
	require.ErrorContains(t, err, "converting argument", "no checker: database/sql refuses a point")
	_, err = db.ExecContext(ctx, "x", sql.Named("a", 1))
	require.ErrorContains(t, err, "Named Parameters")
}

func TestWrapDriver(t *testing.T) {
	s := &fakeServer{}
	b := &recBreaker{}
	d := must(sqlbreaker.WrapDriver(fakeDriver{s}, sqlbreaker.WithBreaker(b)))
	assert.Same(t, b, d.Breaker())
	c, err := d.OpenConnector("dsn")
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	require.NoError(t, db.Ping())
	assert.Same(t, d, db.Driver())
	assert.Equal(t, []string{"accept", "accept"}, b.take())

	conn, err := d.Open("dsn")
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	assert.Equal(t, []string{"accept"}, b.take())
}

// registerOnce registers fakeDriver{registered} as "sqlbreaker-fake".
var (
	registerOnce sync.Once
	registered   = &fakeServer{}
)

func TestOpen(t *testing.T) {
	registerOnce.Do(func() { sql.Register("sqlbreaker-fake", fakeDriver{registered}) })
	b := &recBreaker{}
	db, err := sqlbreaker.Open("sqlbreaker-fake", "dsn", sqlbreaker.WithBreaker(b))
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Ping())
	assert.Equal(t, []string{"accept", "accept"}, b.take())
	d, ok := db.Driver().(*sqlbreaker.Driver)
	require.True(t, ok)
	assert.Same(t, b, d.Breaker())

	_, err = sqlbreaker.Open("no-such-driver", "dsn")
	require.ErrorContains(t, err, "unknown driver")
	_, err = sqlbreaker.Open("sqlbreaker-fake", "dsn", sqlbreaker.WithName(""))
	require.ErrorIs(t, err, sqlbreaker.ErrInvalidOption)
}

func TestWrap_options(t *testing.T) {
	c := must(sqlbreaker.Wrap(&fakeServer{}))
	assert.Equal(t, sqlbreaker.DefaultName, c.Breaker().Name())
	assert.NotSame(t, c.Breaker(), must(sqlbreaker.Wrap(&fakeServer{})).Breaker(), "a breaker per wrapper")
	assert.Equal(t, "orders", must(sqlbreaker.Wrap(&fakeServer{}, sqlbreaker.WithName("orders"))).Breaker().Name())

	for _, tc := range []struct {
		opts []sqlbreaker.Option
		want string
	}{
		{[]sqlbreaker.Option{sqlbreaker.WithName("")}, `sqlbreaker: invalid option: WithName(""): the name must not be empty`},
		{[]sqlbreaker.Option{sqlbreaker.WithBreaker(nil)}, "sqlbreaker: invalid option: WithBreaker(nil): the breaker must not be nil"},
		{[]sqlbreaker.Option{sqlbreaker.WithName("a"), sqlbreaker.WithBreaker(breaker.Nop())},
			`sqlbreaker: invalid option: WithName("a") and WithBreaker: give one; a breaker has its own name`},
		{[]sqlbreaker.Option{sqlbreaker.WithAcceptable(nil)}, "sqlbreaker: invalid option: WithAcceptable(nil): the function must not be nil"},
		{[]sqlbreaker.Option{nil}, "sqlbreaker: invalid option: a nil Option was given"},
	} {
		c, err := sqlbreaker.Wrap(&fakeServer{}, tc.opts...)
		assert.Nil(t, c)
		assert.ErrorIs(t, err, sqlbreaker.ErrInvalidOption)
		assert.EqualError(t, err, tc.want)
		d, err := sqlbreaker.WrapDriver(fakeDriver{&fakeServer{}}, tc.opts...)
		assert.Nil(t, d)
		assert.ErrorIs(t, err, sqlbreaker.ErrInvalidOption)
		assert.EqualError(t, err, tc.want)
	}
	c, err := sqlbreaker.Wrap(nil)
	assert.Nil(t, c)
	assert.ErrorIs(t, err, sqlbreaker.ErrInvalidOption)
	assert.EqualError(t, err, "sqlbreaker: invalid option: Wrap(nil): the connector must not be nil")
	d, err := sqlbreaker.WrapDriver(nil)
	assert.Nil(t, d)
	assert.ErrorIs(t, err, sqlbreaker.ErrInvalidOption)
	assert.EqualError(t, err, "sqlbreaker: invalid option: WrapDriver(nil): the driver must not be nil")
}

func TestSQLState(t *testing.T) {
	for _, tc := range []struct {
		err          error
		state, class string
		acceptable   bool
	}{
		{nil, "", "", true},
		{errors.New("plain"), "", "", false},
		{sql.ErrNoRows, "", "", true},
		{fmt.Errorf("scan: %w", sql.ErrNoRows), "", "", true},
		{&sqlStateError{"23505"}, "23505", "23", true},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", &sqlStateError{"23P01"})), "23P01", "23", true},
		{&sqlStateError{"08006"}, "08006", "08", false},
		{&sqlStateError{"53300"}, "53300", "53", false},
		{&sqlStateError{"4"}, "4", "", false},
	} {
		assert.Equal(t, tc.state, sqlbreaker.SQLState(tc.err), "%v", tc.err)
		assert.Equal(t, tc.class, sqlbreaker.SQLStateClass(tc.err), "%v", tc.err)
		assert.Equal(t, tc.acceptable, sqlbreaker.DefaultAcceptable(tc.err), "%v", tc.err)
	}
}

// The wrapper adds no allocation to a call database/sql makes.
func TestWrap_allocations(t *testing.T) {
	ctx := context.Background()
	bare := sql.OpenDB(&fakeServer{})
	defer bare.Close()
	wrapped := sql.OpenDB(must(sqlbreaker.Wrap(&fakeServer{})))
	defer wrapped.Close()
	for name, f := range map[string]func(db *sql.DB) error{
		"Exec": func(db *sql.DB) error { _, err := db.ExecContext(ctx, "x"); return err },
		"QueryRow": func(db *sql.DB) error {
			var n int
			return db.QueryRowContext(ctx, "q").Scan(&n)
		},
	} {
		require.NoError(t, f(bare))
		require.NoError(t, f(wrapped))
		want := testing.AllocsPerRun(200, func() { _ = f(bare) })
		got := testing.AllocsPerRun(200, func() { _ = f(wrapped) })
		assert.Equal(t, want, got, "%s: allocations through the wrapper, against the bare driver", name)
	}
}
