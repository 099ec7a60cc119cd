package sqlbreaker

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/admitted"
	"github.com/srebreaker/srebreaker/internal/chain"
)

// DefaultAcceptable is the [WithAcceptable] used unless one is given: an
// error counts as a success when it is nil, sql.ErrNoRows, or an error of
// SQLSTATE class 23, integrity constraint violation (unique, foreign key,
// not null, check, exclusion): the server enforced a constraint the
// application asked for. Every other error counts as a failure, among them
// connection errors, timeouts (context.DeadlineExceeded, SQLSTATE 57014),
// too many connections (53300) and the rest of class 53, and the server
// shutting down (class 57).
//
// The SQLSTATE is read from an error in the chain with a method
// SQLState() string (see [SQLState]), as pgx's *pgconn.PgError has. A
// driver whose errors carry the code otherwise, such as MySQL's error
// numbers, needs a [WithAcceptable] of its own.
//
// sql.ErrNoRows comes from database/sql's Row.Scan, never from a driver:
// the query behind it returned no rows, which the wrapper records as the
// success it is. It is accepted here for callers that use this function
// around database/sql calls, with [breaker.Breaker.DoWithAcceptable].
func DefaultAcceptable(err error) bool {
	return err == nil || errors.Is(err, sql.ErrNoRows) || SQLStateClass(err) == "23"
}

// sqlStater is implemented by drivers' server errors that carry a
// SQLSTATE, such as pgx's *pgconn.PgError.
type sqlStater interface {
	SQLState() string
}

// SQLState returns the five-character SQLSTATE of the first error in err's
// chain with a method SQLState() string, such as pgx's *pgconn.PgError, or
// "" if there is none. It does not import any driver.
func SQLState(err error) string {
	var s sqlStater
	if err == nil || !errors.As(err, &s) {
		return ""
	}
	return s.SQLState()
}

// SQLStateClass returns the class of err's SQLSTATE, its first two
// characters ("23" for integrity constraint violations, "08" for
// connection exceptions, "53" for insufficient resources), or "" if err
// carries none (see [SQLState]).
func SQLStateClass(err error) string {
	s := SQLState(err)
	if len(s) < 2 {
		return ""
	}
	return s[:2]
}

// outcome is how a finished call is recorded.
type outcome uint8

const (
	success outcome = iota
	failure
	neither
)

// classify decides how a call that returned err is recorded. ctx is the
// call's context. dialed says the call made a connection (Connect), where
// driver.ErrBadConn is a failure to connect like any other; on a
// connection, it says the connection was broken before the call sent
// anything, and database/sql retries the call on another.
func (o *options) classify(ctx context.Context, err error, dialed bool) outcome {
	switch {
	case err == nil:
		return success
	case errors.Is(err, driver.ErrSkip):
		return neither // database/sql falls back to another method, recorded in turn
	case !dialed && errors.Is(err, driver.ErrBadConn):
		return neither // database/sql retries on another connection, recorded in turn
	case ctx != nil && errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled):
		return neither // the caller gave up: the server is not to blame
	case o.acceptable(err):
		return success
	default:
		return failure
	}
}

// record reports on p how a call of the operation op ended, and notes a
// failure in the chain.Mark of ctx, if it holds one (see package chain).
// It runs user code (the acceptable function, err.Error) that may panic.
func (o *options) record(ctx context.Context, p srebreaker.Promise, op string, err error, dialed bool) {
	switch o.classify(ctx, err, dialed) {
	case success:
		p.Accept()
	case failure:
		p.Reject(op + ": " + err.Error())
		chain.Failed(ctx, o.b) // see package chain
	default:
		srebreaker.Ignore(p)
	}
}

// recordReset reports on p how a session reset that returned err ended.
// A reset that succeeded counts neither way: most resets make no call to
// the server (pgx pings only a connection idle for more than a second),
// and a success would count calls the server never saw. A failure
// matching driver.ErrBadConn, as pgx returns for any failed ping, counts
// neither way either (database/sql takes another connection, the call
// being guarded there in turn), unless the context ended during the
// reset: it is then the context's error that counts, the caller's
// deadline a failure (with [DefaultAcceptable]), its cancellation
// neither. Any other error counts as a call's does.
func (o *options) recordReset(ctx context.Context, p srebreaker.Promise, err error) {
	switch {
	case err == nil:
		srebreaker.Ignore(p)
		return
	case errors.Is(err, driver.ErrBadConn) && ctx.Err() != nil:
		err = ctx.Err()
	}
	o.record(ctx, p, "reset", err, false)
}

// guarded asks the breaker about a call of op (a word for the failure
// reason: "query", "exec") on c, runs f if admitted, after c's pending
// session reset if there is one, and records how it ended, as guard does;
// a panic(nil) that guard stopped is raised again here. It returns what f
// returned, or the breaker's drop error (that of a dropped reset, for the
// call that follows it), or ctx's error when the caller has gone, or the
// pending reset's driver.ErrBadConn. f does not escape, so a closure
// passed to guarded stays on the stack.
func guarded[T any](ctx context.Context, c *conn, op string, f func() (T, error)) (v T, err error) {
	p, err := c.allow(ctx)
	if err != nil {
		return v, err
	}
	if admitted.Run(p, func() {
		away := chain.Leave(ctx) // see package chain
		defer away.Return()
		if c.reset == resetPending {
			if err = c.resetLate(ctx, p); err != nil {
				return
			}
		}
		v, err = f()
		c.o.record(ctx, p, op, err, false)
	}) {
		panic(nil) // raised again: see admitted.Run
	}
	return v, err
}
