//lint:file-ignore SA1019 the wrapper calls drivers' legacy methods, and passes ColumnConverter on, where database/sql would

package sqlbreaker

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/admitted"
)

// conn wraps a driver's connection. database/sql uses a connection from
// one goroutine at a time, and so does conn: its transaction fields are
// not guarded.
type conn struct {
	ci driver.Conn
	o  *options

	// The optional interfaces of ci, looked up once; nil when ci lacks one.
	queryer   driver.QueryerContext
	queryer0  driver.Queryer // the legacy one, read only without queryer
	execer    driver.ExecerContext
	execer0   driver.Execer // the legacy one, read only without execer
	preparer  driver.ConnPrepareContext
	beginner  driver.ConnBeginTx
	pinger    driver.Pinger
	checker   driver.NamedValueChecker
	resetter  driver.SessionResetter
	validator driver.Validator

	// The transaction open on the connection, if any: database/sql has at
	// most one per connection, and the connection is its driver.Tx (see
	// connTx), which costs no allocation.
	tx    driver.Tx
	txCtx context.Context // BeginTx's, for the criticality Commit asks at

	// reset is where the session reset of the connection's latest
	// checkout stands (see resetSession); dropped is the error the breaker
	// gave it, which the call that follows returns.
	reset   resetState
	dropped error
}

// resetState is where a connection's session reset stands.
type resetState uint8

const (
	resetDone    resetState = iota // reset, or nothing to reset
	resetDropped                   // the breaker dropped it: the next guarded call returns dropped
	resetPending                   // still to do: the next guarded call admitted does it first
)

// newConn wraps ci. The wrapper has SessionResetter and Validator only if
// ci has them: database/sql resets a session only through the one, and
// with both keeps a connection whose transaction a canceled context
// rolled back.
func newConn(ci driver.Conn, o *options) driver.Conn {
	c := &conn{ci: ci, o: o}
	c.queryer, _ = ci.(driver.QueryerContext)
	c.queryer0, _ = ci.(driver.Queryer)
	c.execer, _ = ci.(driver.ExecerContext)
	c.execer0, _ = ci.(driver.Execer)
	c.preparer, _ = ci.(driver.ConnPrepareContext)
	c.beginner, _ = ci.(driver.ConnBeginTx)
	c.pinger, _ = ci.(driver.Pinger)
	c.checker, _ = ci.(driver.NamedValueChecker)
	c.resetter, _ = ci.(driver.SessionResetter)
	c.validator, _ = ci.(driver.Validator)
	switch {
	case c.resetter != nil && c.validator != nil:
		return connResetValid{c}
	case c.resetter != nil:
		return connReset{c}
	case c.validator != nil:
		return connValid{c}
	}
	return c
}

// The variants of conn with the interfaces whose presence database/sql
// reads. Each holds only the pointer, so none costs an allocation more.
type (
	connReset      struct{ *conn }
	connValid      struct{ *conn }
	connResetValid struct{ *conn }
)

func (c connReset) ResetSession(ctx context.Context) error      { return c.resetSession(ctx) }
func (c connValid) IsValid() bool                               { return c.validator.IsValid() }
func (c connResetValid) ResetSession(ctx context.Context) error { return c.resetSession(ctx) }
func (c connResetValid) IsValid() bool                          { return c.validator.IsValid() }

// resetSession resets the session of a connection database/sql takes from
// its pool, with the context of the call it is taken for, as a guarded
// call of its own: a driver may make a call to the server there (pgx
// pings a connection idle for more than a second), which a server that
// stops answering leaves waiting until the context ends.
//
// When the breaker drops the reset, the driver's is not made, and the
// call that follows on the connection returns the drop without asking
// again: database/sql takes a connection for one call, and goes on with it
// whatever error other than driver.ErrBadConn a reset returns, so the
// drop is the call's. A later call on the same connection (a sql.Conn's)
// resets the session first, under its own admission.
func (c *conn) resetSession(ctx context.Context) error {
	p, err := c.o.b.AllowCtx(ctx)
	if err != nil {
		c.reset, c.dropped = resetDropped, err
		return err
	}
	c.reset, c.dropped = resetDone, nil
	if admitted.Run(p, func() {
		err = c.resetter.ResetSession(ctx)
		c.o.recordReset(ctx, p, err)
	}) {
		panic(nil) // raised again: see admitted.Run
	}
	return err
}

// allow asks the breaker about a call on the connection. After a reset
// the breaker dropped, it returns that drop instead, once.
func (c *conn) allow(ctx context.Context) (srebreaker.Promise, error) {
	if c.reset == resetDropped {
		err := c.dropped
		c.reset, c.dropped = resetPending, nil
		return nil, err
	}
	return c.o.b.AllowCtx(ctx)
}

// resetLate makes a pending session reset at the start of a call the
// breaker admitted with p. A reset failing with driver.ErrBadConn ends
// the call: resetLate records it on p as a failed reset (see
// options.recordReset) and returns it, and database/sql closes the
// connection. It returns nil otherwise, passing over any other error as
// database/sql passes over a reset's.
func (c *conn) resetLate(ctx context.Context, p srebreaker.Promise) error {
	c.reset = resetDone
	if err := c.resetter.ResetSession(ctx); errors.Is(err, driver.ErrBadConn) {
		c.o.recordReset(ctx, p, err)
		return err
	}
	return nil
}

// Unwrap returns the driver's own connection that a connection of this
// package wraps, and driverConn itself otherwise. Use it in sql.Conn.Raw to
// reach what the driver offers beyond database/sql; calls made on it
// directly are not guarded:
//
//	err := sqlConn.Raw(func(dc any) error {
//		pgxConn := sqlbreaker.Unwrap(dc).(*stdlib.Conn).Conn()
//		...
//	})
func Unwrap(driverConn any) any {
	if u, ok := driverConn.(interface{ unwrap() driver.Conn }); ok {
		return u.unwrap()
	}
	return driverConn
}

func (c *conn) unwrap() driver.Conn { return c.ci }

// Close closes the connection; it is not guarded.
func (c *conn) Close() error { return c.ci.Close() }

// Prepare is PrepareContext without a context; database/sql calls
// PrepareContext.
func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Begin is BeginTx with default options; database/sql calls BeginTx.
//
// Deprecated: as driver.Conn's Begin; use BeginTx.
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.queryer == nil {
		return c.queryLegacy(ctx, query, args)
	}
	return guarded(ctx, c, "query", func() (driver.Rows, error) { return c.queryer.QueryContext(ctx, query, args) })
}

// queryLegacy is QueryContext for a connection without QueryerContext, as
// database/sql does it: the legacy Queryer if there is one, driver.ErrSkip
// (prepare, then query the statement) otherwise.
func (c *conn) queryLegacy(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.queryer0 == nil {
		return nil, driver.ErrSkip
	}
	dargs, err := namedValueToValue(args)
	if err != nil {
		return nil, err
	}
	return guarded(ctx, c, "query", func() (driver.Rows, error) { return c.queryer0.Query(query, dargs) })
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.execer == nil {
		return c.execLegacy(ctx, query, args)
	}
	return guarded(ctx, c, "exec", func() (driver.Result, error) { return c.execer.ExecContext(ctx, query, args) })
}

// execLegacy is ExecContext for a connection without ExecerContext, as
// database/sql does it.
func (c *conn) execLegacy(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.execer0 == nil {
		return nil, driver.ErrSkip
	}
	dargs, err := namedValueToValue(args)
	if err != nil {
		return nil, err
	}
	return guarded(ctx, c, "exec", func() (driver.Result, error) { return c.execer0.Exec(query, dargs) })
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	si, err := guarded(ctx, c, "prepare", func() (driver.Stmt, error) {
		if c.preparer != nil {
			return c.preparer.PrepareContext(ctx, query)
		}
		si, err := c.ci.Prepare(query)
		if err == nil && ctx.Err() != nil { // as database/sql does
			_ = si.Close()
			return nil, ctx.Err()
		}
		return si, err
	})
	if err != nil {
		return nil, err
	}
	return newStmt(si, c), nil
}

// errIsolation and errReadOnly are database/sql's errors for options a
// driver without ConnBeginTx cannot honour.
var (
	errIsolation = errors.New("sql: driver does not support non-default isolation level")
	errReadOnly  = errors.New("sql: driver does not support read-only transactions")
)

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.beginner == nil { // database/sql's checks, before anything is sent
		if opts.Isolation != driver.IsolationLevel(sql.LevelDefault) {
			return nil, errIsolation
		}
		if opts.ReadOnly {
			return nil, errReadOnly
		}
	}
	tx, err := guarded(ctx, c, "begin", func() (driver.Tx, error) {
		if c.beginner != nil {
			return c.beginner.BeginTx(ctx, opts)
		}
		tx, err := c.ci.Begin()
		if err == nil && ctx.Err() != nil { // as database/sql does
			_ = tx.Rollback()
			return nil, ctx.Err()
		}
		return tx, err
	})
	if err != nil {
		return nil, err
	}
	c.tx, c.txCtx = tx, ctx
	return (*connTx)(c), nil
}

// Ping pings the server if the connection implements driver.Pinger, and
// returns nil otherwise, as database/sql does.
func (c *conn) Ping(ctx context.Context) error {
	if c.pinger == nil {
		if c.reset == resetDropped { // the call the dropped reset was for
			_, err := c.allow(ctx)
			return err
		}
		return nil
	}
	_, err := guarded(ctx, c, "ping", func() (struct{}, error) { return struct{}{}, c.pinger.Ping(ctx) })
	return err
}

// CheckNamedValue is the connection's driver.NamedValueChecker if it has
// one; without it, driver.ErrSkip tells database/sql to convert the value
// as it would have.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c.checker == nil {
		return driver.ErrSkip
	}
	return c.checker.CheckNamedValue(nv)
}

// connTx is a conn as the driver.Tx of the transaction open on it.
type connTx conn

// Commit commits the transaction if the breaker admits it, and rolls it
// back otherwise.
func (t *connTx) Commit() (err error) {
	c := (*conn)(t)
	tx, ctx := c.tx, c.txCtx
	c.tx, c.txCtx = nil, nil
	p, err := c.o.b.AllowCtx(ctx)
	if err != nil { // dropped, or the context is done: nothing may stay open
		if rerr := tx.Rollback(); rerr != nil {
			return fmt.Errorf("%w; rolling back the transaction failed: %v (%w)", err, rerr, driver.ErrBadConn)
		}
		return err
	}
	if admitted.Run(p, func() {
		err = tx.Commit()
		c.o.record(ctx, p, "commit", err, false)
	}) {
		panic(nil) // raised again: see admitted.Run
	}
	return err
}

// Rollback rolls the transaction back; it is not guarded.
func (t *connTx) Rollback() error {
	c := (*conn)(t)
	tx := c.tx
	c.tx, c.txCtx = nil, nil
	return tx.Rollback()
}

// namedValueToValue is database/sql's conversion for legacy methods.
func namedValueToValue(named []driver.NamedValue) ([]driver.Value, error) {
	dargs := make([]driver.Value, len(named))
	for n, param := range named {
		if len(param.Name) > 0 {
			return nil, errors.New("sql: driver does not support the use of Named Parameters")
		}
		dargs[n] = param.Value
	}
	return dargs, nil
}
