//go:build unix

package faulttest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
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
	// resets, when not nil, tells the harness of session resets as of
	// calls let through while the fault lasts, and counts those that
	// failed once their call's context had ended.
	resets *resetHook
}

func (c hookConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.h.admit(callID(ctx))
	conn, err := c.base.Connect(ctx)
	if err != nil {
		c.h.answer(ctx, callID(ctx)) // the call's answer: held as a query's
		return nil, err
	}
	return &hookConn{h: c.h, base: conn, resets: c.resets}, nil
}

func (c hookConnector) Driver() driver.Driver { return c.base.Driver() }

// hookConn is a pgx connection with the interfaces the test uses.
type hookConn struct {
	h      *harness
	base   driver.Conn
	resets *resetHook
}

// resetHook counts the session resets of calls made while the fault
// lasts that failed, and whose calls' contexts ended before the failure
// was let through: pings that got no answer.
type resetHook struct {
	hung atomic.Int64
}

func (c *hookConn) Prepare(query string) (driver.Stmt, error) { return c.base.Prepare(query) }
func (c *hookConn) Close() error                              { return c.base.Close() }

//lint:ignore SA1019 driver.Conn's method, passed on
func (c *hookConn) Begin() (driver.Tx, error) { return c.base.Begin() } //nolint:staticcheck // as above

// ResetSession is pgx's. With resets, a reset of a call made while the
// fault lasts is let through to the server: pgx pings there every
// connection idle for more than a second, and the test makes every
// connection in the pool idle that long before the fault begins. A failed
// one is held as a query's answer: a ping the black hole holds fails when
// the fault ends, and is held until its call's deadline.
func (c *hookConn) ResetSession(ctx context.Context) error {
	id := callID(ctx)
	call := c.h.get(id)
	through := c.resets != nil && call != nil && call.phase == faulty
	if through {
		c.h.admit(id)
	}
	err := c.base.(driver.SessionResetter).ResetSession(ctx)
	if through && err != nil {
		c.h.answer(ctx, id)
		if ctx.Err() != nil {
			c.resets.hung.Add(1)
		}
	}
	return err
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
		// pgx pings a connection idle for more than a second of real time
		// when database/sql hands it out again (ResetSession): whether it
		// does would depend on how fast the test runs, and with it what
		// the breaker sees of the resets and retries of a fault. The
		// scenarios here turn it off, so that the breakers see the same
		// sequence on every run; TestWrap_blackHoleAtPgxDefaults runs a
		// black hole with it, where every reuse pings.
		noPing := stdlib.OptionShouldPing(func(context.Context, stdlib.ShouldPingParams) bool { return false })
		rig := newSQLRig(t, h, addr, sqlSetup{idle: 64, opts: []stdlib.OptionOpenDB{noPing}})
		return rig.in, rig.p
	})
}

// sqlSetup says how newSQLRig sets sqlbreaker's connector on pgx up.
type sqlSetup struct {
	// idle is how many idle connections the pool keeps (SetMaxIdleConns),
	// and prefill how many of them it opens before the traffic.
	idle, prefill int
	// resets lets the session resets of the fault's calls through (see
	// hookConn.ResetSession).
	resets bool
	// opts are pgx's options; none for its defaults.
	opts []stdlib.OptionOpenDB
}

// sqlRig is the integration of sqlbreaker's connector on pgx's
// database/sql driver, to a PostgreSQL server behind a proxy, and what it
// measures beyond the harness.
type sqlRig struct {
	in     integration
	p      *proxy
	resets resetHook
	lag    atomic.Int64 // the longest a call returned after its context ended, in nanoseconds (real time)
}

// newSQLRig makes the integration, to the server at addr.
func newSQLRig(t *testing.T, h *harness, addr string, setup sqlSetup) *sqlRig {
	r := &sqlRig{p: newProxy(t, addr)}
	cfg, err := pgx.ParseConfig("postgres://postgres@" + r.p.addr() + "/postgres?sslmode=disable&connect_timeout=60")
	require.NoError(t, err)
	hc := hookConnector{h: h, base: stdlib.GetConnector(*cfg, setup.opts...)}
	if setup.resets {
		hc.resets = &r.resets
	}
	guarded, err := sqlbreaker.Wrap(hc, sqlbreaker.WithBreaker(h.reg.Get("postgres")))
	require.NoError(t, err)
	db := sql.OpenDB(guarded)
	db.SetMaxIdleConns(setup.idle)
	t.Cleanup(func() { _ = db.Close() })
	conns := make([]*sql.Conn, setup.prefill)
	for i := range conns {
		conns[i], err = db.Conn(context.Background())
		require.NoError(t, err)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
	// After healing, no idle connection the fault closed is handed out.
	ready := func() {
		db.SetMaxIdleConns(0)
		db.SetMaxIdleConns(setup.idle)
	}
	r.in = integration{ready: ready, do: func(ctx context.Context, id int) error {
		var ended atomic.Int64 // when ctx ended, in Unix nanoseconds
		stop := context.AfterFunc(ctx, func() { ended.Store(time.Now().UnixNano()) })
		var v string
		err := db.QueryRowContext(ctx, answerQuery).Scan(&v)
		if !stop() {
			if at := ended.Load(); at != 0 {
				r.noteLag(time.Since(time.Unix(0, at)))
			}
		}
		if err != nil {
			if !closed(h.get(id).admitted) && !errors.Is(err, breaker.ErrServiceUnavailable) {
				return errors.Join(errors.New("failed before it was let through, not dropped"), err)
			}
			return err
		}
		return checkAnswer(v)
	}}
	return r
}

func (r *sqlRig) noteLag(d time.Duration) {
	for {
		old := r.lag.Load()
		if int64(d) <= old || r.lag.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// TestWrap_blackHoleAtPgxDefaults: the black hole of TestWrap_faults with
// pgx at its defaults, and a pool of idle connections, each idle for more
// than a second when it begins, so that pgx pings each before it is used
// again, as many as the calls the fault makes before the breaker sheds
// it. The pings are the calls that hang, under the breaker: it sheds them
// within the goals of a hang, and no call returns later than its context
// ends (in the harness, at its virtual deadline).
func TestWrap_blackHoleAtPgxDefaults(t *testing.T) {
	addr, err := postgresAddr()
	require.NoError(t, err)
	t.Parallel()
	f := blackHole
	f.name = "blackHoleAtPgxDefaults"
	f.on = func(p *proxy) {
		// pgx's ResetSession reads the wall clock (time.Now) to decide
		// whether a connection idled for more than a second: only a real
		// second makes every connection in the pool idle that long, and
		// the mock clock cannot. This is the test's one wait for time to
		// pass, bounded, between the healthy traffic and the fault.
		time.Sleep(1100 * time.Millisecond)
		blackHole.on(p)
	}
	s := scenario{warm: 3 * time.Second, span: 4500 * time.Millisecond, after: 2 * time.Second,
		timeout: 5 * time.Second, fault: f}
	h := newHarness(t, f)
	// 600 connections: the fault's calls of 3 s. Unguarded, each ping
	// would hang unseen, and the breaker would shed no sooner than the
	// pool ran out.
	rig := newSQLRig(t, h, addr, sqlSetup{idle: 600, prefill: 600, resets: true})
	fig := h.run(s, rig.in, rig.p)
	hung := rig.resets.hung.Load()
	lag := time.Duration(rig.lag.Load())
	t.Logf("%s: %s; pings unanswered until their deadline %d; longest return after a context ended %v",
		f.name, fig, hung, lag)
	hangGoals(t, fig)
	assert.Positive(t, hung, "no ping was made, or none waited until its deadline")
	assert.Less(t, lag, 5*time.Second, "a call returned long after its context ended")
}
