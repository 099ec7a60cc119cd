// Package sqlbreaker guards a database behind database/sql with a breaker
// of package breaker, at the driver level, so that it works with every
// driver: [Wrap] wraps a driver.Connector, [WrapDriver] a driver.Driver,
// and [Open] is sql.Open with a breaker.
//
//	guarded, err := sqlbreaker.Wrap(connector, sqlbreaker.WithName("orders-db"))
//	if err != nil {
//		return err // an invalid option, named in the error
//	}
//	db := sql.OpenDB(guarded)
//
// Every call that reaches the server asks the breaker first: connecting,
// queries and execs (on a connection or a prepared statement), prepare,
// begin, commit, ping, and the session reset of a connection taken from
// the pool, where pgx pings a connection idle for more than a second: on
// a database that stops answering, that ping is a call out like a query,
// shed by the breaker and bounded by the caller's context. When the database fails or is overloaded, the
// breaker drops a share of the calls, which then fail at once with an
// error matching [breaker.ErrServiceUnavailable], and lets the rest through
// to find out when it is back.
//
// # What counts as a failure
//
// Connection errors, timeouts (the caller's deadline, the server's
// statement timeout), "too many connections" and the other errors of a
// server in trouble count as failures. The answers of a healthy server to a
// request it refused do not: no rows (sql.ErrNoRows, which database/sql
// makes from a query that succeeded), a constraint violation (SQLSTATE
// class 23, read through an error's SQLState method, as pgx's errors have
// one), the caller's own cancellation, and the driver's driver.ErrSkip
// and driver.ErrBadConn, after which database/sql tries another way or
// another connection, guarded in turn. [WithAcceptable] changes the
// default, [DefaultAcceptable].
//
// A dropped call leaves the pool as it was: its connection is not closed,
// since the drop error is not driver.ErrBadConn (see [Wrap]).
//
// docs/guide/sql.md in the repository has a longer guide, with a note for users
// of go-zero's core/stores/sqlx.
//
// The connectors and drivers of this package are safe for concurrent use
// by multiple goroutines; the connections they make are used as
// database/sql uses a driver's, by one goroutine at a time.
package sqlbreaker
