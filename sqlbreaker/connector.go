package sqlbreaker

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/admitted"
)

// Connector is a driver.Connector that guards with a breaker the
// connections another connector makes, and every call made on them. Give
// it to sql.OpenDB. Its Driver is a [Driver] with the same breaker.
//
// A Connector is safe for concurrent use by multiple goroutines.
type Connector struct {
	c driver.Connector
	o *options
	d *Driver
}

// Wrap returns a connector that guards the connections c makes, and every
// call on them, with one breaker, the wrapper's own unless [WithBreaker]
// gives one:
//
//	guarded, err := sqlbreaker.Wrap(connector, sqlbreaker.WithName("orders-db"))
//	if err != nil {
//		return err
//	}
//	db := sql.OpenDB(guarded)
//
// Each call that reaches the server asks the breaker first: Connect, a
// query or an exec (on the connection or on a prepared statement),
// Prepare, Begin, Commit, Ping, and the session reset database/sql makes
// with a call's context when it takes a connection from the pool (pgx
// pings there a connection idle for more than a second). An admitted call
// is recorded as a success or a failure when it returns, a panic in the
// driver as a failure, which is raised again. Rollback and Close are
// cleanup: never dropped, never recorded.
//
// A session reset that succeeds counts neither way, as most make no call
// to the server. One that fails with driver.ErrBadConn once the call's
// context ended counts as the context's error: the caller's deadline a
// failure, its cancellation neither. A dropped reset is the drop of the
// call it was made for: that call returns the drop without asking again
// and without reaching the driver; a later call on the same connection
// (a sql.Conn's), when admitted, resets the session first. Rows are not watched: a query is recorded when
// the driver returns its rows, which for most drivers, pgx's among them,
// is after the first row or the error arrived.
//
// What counts as a failure is up to [WithAcceptable], [DefaultAcceptable]
// unless given, after three cases it never sees: driver.ErrSkip (the
// driver asks database/sql to use another method, which is guarded in
// turn), driver.ErrBadConn from a call on a connection (the connection
// was broken before the call sent anything, and database/sql retries it
// on another; from Connect it is a failure), and an error matching
// context.Canceled when the call's context was canceled (the caller gave
// up). Those count neither way. A context already done when the call
// starts returns its error, and nothing is asked or recorded.
//
// A dropped call returns the breaker's error, which matches
// [breaker.ErrServiceUnavailable] (errors.Is) and names the breaker and its
// newest failure reason, and does not reach the driver. The connection it
// was to run on stays in the pool: the error is not driver.ErrBadConn, on
// purpose, because database/sql would take that as a broken connection,
// close it and retry the call on another, up to three times, asking the
// breaker each time. A dropped Commit rolls the transaction back first, so
// that nothing was committed and the connection returns to the pool with
// no transaction open; should that rollback fail, the error also matches
// driver.ErrBadConn, so that database/sql closes the connection. A dropped
// Connect opens nothing.
//
// A connection exposes the optional interfaces of database/sql/driver
// that database/sql looks for, so that it behaves as the wrapped one:
// QueryerContext, ExecerContext, ConnPrepareContext, ConnBeginTx, Pinger
// and NamedValueChecker always, doing what database/sql does when the
// wrapped connection lacks one (driver.ErrSkip, the legacy method, or
// nothing); SessionResetter and Validator only when the wrapped one has
// them, since their presence changes what database/sql does. To reach
// the driver's own connection in sql.Conn.Raw, use [Unwrap].
//
// Wrap returns an error wrapping [ErrInvalidOption], naming the option and
// its value, when an option is invalid, and when c is nil.
func Wrap(c driver.Connector, opts ...Option) (*Connector, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: Wrap(nil): the connector must not be nil", ErrInvalidOption)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Connector{c: c, o: o, d: &Driver{d: c.Driver(), o: o}}, nil
}

// Connect opens a connection with the wrapped connector, if the breaker
// admits it; database/sql calls it.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	return c.o.connect(ctx, func() (driver.Conn, error) { return c.c.Connect(ctx) })
}

// Driver returns a [Driver] wrapping the wrapped connector's driver with
// the same breaker.
func (c *Connector) Driver() driver.Driver { return c.d }

// Close closes the wrapped connector if it implements io.Closer, and
// returns nil otherwise; sql.DB.Close calls it.
func (c *Connector) Close() error {
	if cl, ok := c.c.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// Breaker returns the breaker that guards the connections.
func (c *Connector) Breaker() breaker.Breaker { return c.o.b }

// Driver is a driver.Driver that guards with a breaker the connections
// another driver opens, and every call made on them, as [Wrap] does. All
// the connections it and its connectors open share the breaker: wrap a
// driver once per database.
//
// A Driver is safe for concurrent use by multiple goroutines.
type Driver struct {
	d driver.Driver
	o *options
}

// WrapDriver returns a driver that guards the connections d opens with one
// breaker, as [Wrap] describes, for sql.Register:
//
//	guarded, err := sqlbreaker.WrapDriver(stdlib.GetDefaultDriver(), sqlbreaker.WithName("orders-db"))
//	if err != nil {
//		return err
//	}
//	sql.Register("pgx-guarded", guarded)
//
// It returns an error wrapping [ErrInvalidOption], naming the option and
// its value, when an option is invalid, and when d is nil.
func WrapDriver(d driver.Driver, opts ...Option) (*Driver, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: WrapDriver(nil): the driver must not be nil", ErrInvalidOption)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Driver{d: d, o: o}, nil
}

// Open opens a connection with the wrapped driver, if the breaker admits
// it.
func (d *Driver) Open(name string) (driver.Conn, error) {
	return d.o.connect(context.Background(), func() (driver.Conn, error) { return d.d.Open(name) })
}

// OpenConnector returns a [Connector] for the data source name with the
// driver's breaker: the wrapped driver's connector if it implements
// driver.DriverContext, one that calls its Open otherwise. sql.Open calls
// it.
func (d *Driver) OpenConnector(name string) (driver.Connector, error) {
	var c driver.Connector = dsnConnector{name: name, d: d.d}
	if dc, ok := d.d.(driver.DriverContext); ok {
		var err error
		if c, err = dc.OpenConnector(name); err != nil {
			return nil, err
		}
	}
	return &Connector{c: c, o: d.o, d: d}, nil
}

// Breaker returns the breaker that guards the connections.
func (d *Driver) Breaker() breaker.Breaker { return d.o.b }

// dsnConnector is the connector of a driver without one of its own, as
// database/sql makes it.
type dsnConnector struct {
	name string
	d    driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.name) }
func (c dsnConnector) Driver() driver.Driver                        { return c.d }

// Open opens a database as sql.Open does, with the driver registered as
// driverName, and guards its connections with one breaker, as [Wrap]
// describes:
//
//	db, err := sqlbreaker.Open("pgx", dsn, sqlbreaker.WithName("orders-db"))
//
// It returns an error wrapping [ErrInvalidOption] when an option is
// invalid, and sql.Open's error when the driver is unknown. Like sql.Open,
// it does not connect.
func Open(driverName, dataSourceName string, opts ...Option) (*sql.DB, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	// database/sql finds a driver by name only through sql.Open; this
	// handle opens no connection and is closed at once.
	probe, err := sql.Open(driverName, dataSourceName)
	if err != nil {
		return nil, err
	}
	d := probe.Driver()
	if err := probe.Close(); err != nil {
		return nil, err
	}
	c, err := (&Driver{d: d, o: o}).OpenConnector(dataSourceName)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// connect opens a connection with dial, if the breaker admits it, and
// wraps it.
func (o *options) connect(ctx context.Context, dial func() (driver.Conn, error)) (driver.Conn, error) {
	p, err := o.b.AllowCtx(ctx)
	if err != nil {
		return nil, err
	}
	var ci driver.Conn
	if admitted.Run(p, func() {
		ci, err = dial()
		o.record(ctx, p, "connect", err, true)
	}) {
		panic(nil) // raised again: see admitted.Run
	}
	if err != nil {
		return nil, err
	}
	return newConn(ci, o), nil
}
