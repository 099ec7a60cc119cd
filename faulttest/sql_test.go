//go:build unix

package faulttest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

// answerQuery selects answerBody.
const answerQuery = "SELECT repeat('0123456789abcdef', 256)"

// hookConnector is the connector sqlbreaker wraps: it tells the harness
// when a connection or a query is let through, and holds a query's answer
// (its rows, read whole), or a connection's failure, until the call's
// virtual release.
type hookConnector struct {
	h    *harness
	base driver.Connector
}

func (c hookConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.h.admit(callID(ctx))
	conn, err := c.base.Connect(ctx)
	if err != nil {
		c.h.answer(ctx, callID(ctx)) // the call's answer: held as a query's
		return nil, err
	}
	return &hookConn{h: c.h, base: conn}, nil
}

func (c hookConnector) Driver() driver.Driver { return c.base.Driver() }

// hookConn is a pgx connection with the interfaces the test uses.
type hookConn struct {
	h    *harness
	base driver.Conn
}

func (c *hookConn) Prepare(query string) (driver.Stmt, error) { return c.base.Prepare(query) }
func (c *hookConn) Close() error                              { return c.base.Close() }

//lint:ignore SA1019 driver.Conn's method, passed on
func (c *hookConn) Begin() (driver.Tx, error) { return c.base.Begin() } //nolint:staticcheck // as above

func (c *hookConn) ResetSession(ctx context.Context) error {
	return c.base.(driver.SessionResetter).ResetSession(ctx)
}

func (c *hookConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	id := callID(ctx)
	c.h.admit(id)
	rows, err := c.base.(driver.QueryerContext).QueryContext(ctx, query, args)
	var mem *memRows
	if err == nil {
		mem, err = readRows(rows)
	}
	c.h.answer(ctx, id)
	if err != nil {
		return nil, err
	}
	return mem, nil
}

// memRows are rows read whole.
type memRows struct {
	cols []string
	rows [][]driver.Value
}

func readRows(rows driver.Rows) (*memRows, error) {
	defer rows.Close()
	m := &memRows{cols: rows.Columns()}
	for {
		row := make([]driver.Value, len(m.cols))
		err := rows.Next(row)
		if err == io.EOF {
			return m, nil
		}
		if err != nil {
			return nil, err
		}
		m.rows = append(m.rows, row)
	}
}

func (m *memRows) Columns() []string { return m.cols }
func (m *memRows) Close() error      { return nil }
func (m *memRows) Next(dest []driver.Value) error {
	if len(m.rows) == 0 {
		return io.EOF
	}
	copy(dest, m.rows[0])
	m.rows = m.rows[1:]
	return nil
}

// TestWrap_faults: sqlbreaker's connector on pgx's database/sql driver, to
// a PostgreSQL server behind the proxy.
func TestWrap_faults(t *testing.T) {
	addr, err := postgresAddr()
	require.NoError(t, err)
	runFaults(t, func(t *testing.T, h *harness) (integration, *proxy) {
		p := newProxy(t, addr)
		cfg, err := pgx.ParseConfig("postgres://postgres@" + p.addr() + "/postgres?sslmode=disable&connect_timeout=60")
		require.NoError(t, err)
		// pgx pings a connection idle for more than a second of real time
		// when database/sql hands it out again (ResetSession), before the
		// query asks the breaker: in a black hole, that ping would hang
		// where sqlbreaker neither sheds it nor counts it, and whether it
		// is made would depend on how fast the test runs. The tests turn
		// it off; see docs/sql.md, "Hangs".
		noPing := stdlib.OptionShouldPing(func(context.Context, stdlib.ShouldPingParams) bool { return false })
		guarded, err := sqlbreaker.Wrap(hookConnector{h: h, base: stdlib.GetConnector(*cfg, noPing)},
			sqlbreaker.WithBreaker(h.reg.Get("postgres")))
		require.NoError(t, err)
		db := sql.OpenDB(guarded)
		db.SetMaxIdleConns(64)
		t.Cleanup(func() { _ = db.Close() })
		// After healing, no idle connection the fault closed is handed out.
		ready := func() {
			db.SetMaxIdleConns(0)
			db.SetMaxIdleConns(64)
		}
		return integration{ready: ready, do: func(ctx context.Context, id int) error {
			var v string
			err := db.QueryRowContext(ctx, answerQuery).Scan(&v)
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
