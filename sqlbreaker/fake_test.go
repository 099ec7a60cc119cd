package sqlbreaker_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// fakeServer is an in-process test double of a database and its driver: it
// notes the calls that reach it and answers as its hook says.
type fakeServer struct {
	mu       sync.Mutex
	calls    []string // guarded by mu; "connect", "query", "stmt.exec", ...
	connects int      // guarded by mu
	closed   int      // guarded by mu; connections closed
	// hook, if set, runs at each call (op as in calls) and returns its
	// error; it may block on ctx, panic or exit the goroutine.
	hook func(ctx context.Context, op string) error
	// invalid makes the connections' IsValid return false.
	invalid bool
	// minimal makes connections with only driver.Conn's methods, and
	// statements with only driver.Stmt's.
	minimal bool
	// resetOnly, with minimal, adds driver.SessionResetter to the
	// connections.
	resetOnly bool
	// bench leaves calls alone, for benchmarks, which make millions.
	bench bool
}

func (s *fakeServer) call(ctx context.Context, op string) error {
	if s.bench {
		return nil
	}
	s.mu.Lock()
	s.calls = append(s.calls, op)
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		return hook(ctx, op)
	}
	return nil
}

func (s *fakeServer) setHook(hook func(ctx context.Context, op string) error) {
	s.mu.Lock()
	s.hook = hook
	s.mu.Unlock()
}

// takeCalls returns the calls noted since the last takeCalls.
func (s *fakeServer) takeCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *fakeServer) stats() (connects, closed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects, s.closed
}

// Connect makes s a driver.Connector.
func (s *fakeServer) Connect(ctx context.Context) (driver.Conn, error) {
	if err := s.call(ctx, "connect"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.connects++
	s.mu.Unlock()
	base := &minimalConn{s: s}
	if s.minimal && s.resetOnly {
		return &resetConn{base}, nil
	}
	if s.minimal {
		return base, nil
	}
	return &fullConn{base}, nil
}

func (s *fakeServer) Driver() driver.Driver { return fakeDriver{s} }

// Open makes s a driver.Driver for fakeDriver.
func (s *fakeServer) Open(string) (driver.Conn, error) { return s.Connect(context.Background()) }

type fakeDriver struct{ s *fakeServer }

func (d fakeDriver) Open(name string) (driver.Conn, error) { return d.s.Open(name) }

// minimalConn has driver.Conn's methods alone.
type minimalConn struct {
	s    *fakeServer
	inTx bool
}

func (c *minimalConn) Prepare(query string) (driver.Stmt, error) {
	return c.prepare(context.Background(), query)
}

func (c *minimalConn) prepare(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.s.call(ctx, "prepare"); err != nil {
		return nil, err
	}
	st := &minimalStmt{c: c, text: query}
	if c.s.minimal {
		return st, nil
	}
	return &fullStmt{st}, nil
}

func (c *minimalConn) Close() error {
	c.s.mu.Lock()
	c.s.closed++
	c.s.mu.Unlock()
	return nil
}

func (c *minimalConn) Begin() (driver.Tx, error) {
	return c.begin(context.Background())
}

func (c *minimalConn) begin(ctx context.Context) (driver.Tx, error) {
	if c.inTx {
		return nil, errors.New("fake: a transaction is open already")
	}
	if err := c.s.call(ctx, "begin"); err != nil {
		return nil, err
	}
	c.inTx = true
	return fakeTx{c}, nil
}

type fakeTx struct{ c *minimalConn }

func (t fakeTx) Commit() error {
	t.c.inTx = false
	return t.c.s.call(context.Background(), "commit")
}

func (t fakeTx) Rollback() error {
	t.c.inTx = false
	return t.c.s.call(context.Background(), "rollback")
}

// resetConn has driver.SessionResetter and driver.Conn's methods.
type resetConn struct{ *minimalConn }

func (c *resetConn) ResetSession(ctx context.Context) error { return c.s.call(ctx, "reset") }

// fullConn has every optional interface database/sql looks for.
type fullConn struct{ *minimalConn }

var (
	_ driver.QueryerContext     = (*fullConn)(nil)
	_ driver.ExecerContext      = (*fullConn)(nil)
	_ driver.ConnPrepareContext = (*fullConn)(nil)
	_ driver.ConnBeginTx        = (*fullConn)(nil)
	_ driver.Pinger             = (*fullConn)(nil)
	_ driver.SessionResetter    = (*fullConn)(nil)
	_ driver.Validator          = (*fullConn)(nil)
	_ driver.NamedValueChecker  = (*fullConn)(nil)
)

func (c *fullConn) QueryContext(ctx context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	if query == "skip" {
		return nil, driver.ErrSkip
	}
	if err := c.s.call(ctx, "query"); err != nil {
		return nil, err
	}
	return newRows(query), nil
}

func (c *fullConn) ExecContext(ctx context.Context, query string, _ []driver.NamedValue) (driver.Result, error) {
	if query == "skip" {
		return nil, driver.ErrSkip
	}
	if err := c.s.call(ctx, "exec"); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

func (c *fullConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.prepare(ctx, query)
}

func (c *fullConn) BeginTx(ctx context.Context, _ driver.TxOptions) (driver.Tx, error) {
	return c.begin(ctx)
}

func (c *fullConn) Ping(ctx context.Context) error { return c.s.call(ctx, "ping") }

func (c *fullConn) ResetSession(ctx context.Context) error { return c.s.call(ctx, "reset") }

func (c *fullConn) IsValid() bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return !c.s.invalid
}

// CheckNamedValue accepts a point, which database/sql's default
// conversion refuses, as a string.
func (c *fullConn) CheckNamedValue(nv *driver.NamedValue) error {
	if p, ok := nv.Value.(point); ok {
		nv.Value = fmt.Sprintf("(%d,%d)", p.x, p.y)
		return nil
	}
	return driver.ErrSkip
}

// point is an argument only a fullConn's CheckNamedValue converts.
type point struct{ x, y int }

// minimalStmt has driver.Stmt's methods alone.
type minimalStmt struct {
	c    *minimalConn
	text string
}

func (s *minimalStmt) Close() error  { return nil }
func (s *minimalStmt) NumInput() int { return -1 }

func (s *minimalStmt) Exec([]driver.Value) (driver.Result, error) {
	return s.exec(context.Background())
}

func (s *minimalStmt) Query([]driver.Value) (driver.Rows, error) {
	return s.run(context.Background())
}

func (s *minimalStmt) exec(ctx context.Context) (driver.Result, error) {
	if err := s.c.s.call(ctx, "stmt.exec"); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

func (s *minimalStmt) run(ctx context.Context) (driver.Rows, error) {
	if err := s.c.s.call(ctx, "stmt.query"); err != nil {
		return nil, err
	}
	return newRows(s.text), nil
}

// fullStmt has the context methods too.
type fullStmt struct{ *minimalStmt }

var (
	_ driver.StmtExecContext  = (*fullStmt)(nil)
	_ driver.StmtQueryContext = (*fullStmt)(nil)
)

func (s *fullStmt) ExecContext(ctx context.Context, _ []driver.NamedValue) (driver.Result, error) {
	return s.exec(ctx)
}

func (s *fullStmt) QueryContext(ctx context.Context, _ []driver.NamedValue) (driver.Rows, error) {
	return s.run(ctx)
}

// fakeRows has one column and one row holding int64(1), or none when the
// query is "none".
type fakeRows struct{ left int }

func newRows(query string) *fakeRows {
	if query == "none" {
		return &fakeRows{}
	}
	return &fakeRows{left: 1}
}

func (r *fakeRows) Columns() []string { return []string{"n"} }
func (r *fakeRows) Close() error      { return nil }

func (r *fakeRows) Next(dest []driver.Value) error {
	if r.left == 0 {
		return io.EOF
	}
	r.left--
	dest[0] = int64(1)
	return nil
}

// sqlStateError is a server error with a SQLSTATE, as pgx's are.
type sqlStateError struct{ code string }

func (e *sqlStateError) Error() string    { return "fake: SQLSTATE " + e.code }
func (e *sqlStateError) SQLState() string { return e.code }

// recBreaker is a test double of a breaker: it admits every call unless
// drop is set, and notes each decision and outcome.
type recBreaker struct {
	breaker.Breaker // nil: the Do methods are not used

	mu       sync.Mutex
	drop     bool     // guarded by mu
	outcomes []string // guarded by mu; "accept", "reject: reason", "ignore", "drop"
}

// errDropped is recBreaker's error for a dropped call.
var errDropped = fmt.Errorf("recBreaker: %w", breaker.ErrServiceUnavailable)

func (b *recBreaker) Name() string { return "rec" }

func (b *recBreaker) Allow() (srebreaker.Promise, error) { return b.AllowCtx(context.Background()) }

func (b *recBreaker) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drop {
		b.outcomes = append(b.outcomes, "drop")
		return nil, errDropped
	}
	return recPromise{b}, nil
}

func (b *recBreaker) note(s string) {
	b.mu.Lock()
	b.outcomes = append(b.outcomes, s)
	b.mu.Unlock()
}

func (b *recBreaker) setDrop(drop bool) {
	b.mu.Lock()
	b.drop = drop
	b.mu.Unlock()
}

// take returns the outcomes noted since the last take.
func (b *recBreaker) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.outcomes
	b.outcomes = nil
	return o
}

type recPromise struct{ b *recBreaker }

func (p recPromise) Accept()              { p.b.note("accept") }
func (p recPromise) Reject(reason string) { p.b.note("reject: " + reason) }
func (p recPromise) Ignore()              { p.b.note("ignore") }
