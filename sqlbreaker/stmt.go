//lint:file-ignore SA1019 the wrapper calls drivers' legacy methods, and passes ColumnConverter on, where database/sql would

package sqlbreaker

import (
	"context"
	"database/sql/driver"
)

// stmt wraps a driver's prepared statement.
type stmt struct {
	si driver.Stmt
	c  *conn

	// The optional interfaces of si, looked up once; nil when si lacks one.
	execer  driver.StmtExecContext
	queryer driver.StmtQueryContext
	checker driver.NamedValueChecker
}

// newStmt wraps si, prepared on c. The wrapper has ColumnConverter only if
// si has it: database/sql converts arguments otherwise when it does.
func newStmt(si driver.Stmt, c *conn) driver.Stmt {
	s := &stmt{si: si, c: c}
	s.execer, _ = si.(driver.StmtExecContext)
	s.queryer, _ = si.(driver.StmtQueryContext)
	s.checker, _ = si.(driver.NamedValueChecker)
	if cc, ok := si.(driver.ColumnConverter); ok {
		return stmtConverter{s, cc}
	}
	return s
}

// stmtConverter is a stmt whose statement has a ColumnConverter.
type stmtConverter struct {
	*stmt
	cc driver.ColumnConverter
}

func (s stmtConverter) ColumnConverter(idx int) driver.ValueConverter {
	return s.cc.ColumnConverter(idx)
}

// Close closes the statement; it is not guarded.
func (s *stmt) Close() error { return s.si.Close() }

// NumInput is the statement's.
func (s *stmt) NumInput() int { return s.si.NumInput() }

// CheckNamedValue is the statement's driver.NamedValueChecker, or else its
// connection's, as database/sql would choose; without either,
// driver.ErrSkip tells database/sql to convert the value as it would have.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error {
	switch {
	case s.checker != nil:
		return s.checker.CheckNamedValue(nv)
	case s.c.checker != nil:
		return s.c.checker.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// Exec is ExecContext without a context; database/sql calls ExecContext.
//
// Deprecated: as driver.Stmt's Exec; use ExecContext.
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), valueToNamedValue(args))
}

// Query is QueryContext without a context; database/sql calls
// QueryContext.
//
// Deprecated: as driver.Stmt's Query; use QueryContext.
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), valueToNamedValue(args))
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if s.execer != nil {
		return guarded(ctx, s.c, "exec", func() (driver.Result, error) { return s.execer.ExecContext(ctx, args) })
	}
	dargs, err := namedValueToValue(args)
	if err != nil {
		return nil, err
	}
	return guarded(ctx, s.c, "exec", func() (driver.Result, error) { return s.si.Exec(dargs) })
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if s.queryer != nil {
		return guarded(ctx, s.c, "query", func() (driver.Rows, error) { return s.queryer.QueryContext(ctx, args) })
	}
	dargs, err := namedValueToValue(args)
	if err != nil {
		return nil, err
	}
	return guarded(ctx, s.c, "query", func() (driver.Rows, error) { return s.si.Query(dargs) })
}

// valueToNamedValue is the reverse of namedValueToValue, for the legacy
// methods.
func valueToNamedValue(args []driver.Value) []driver.NamedValue {
	nargs := make([]driver.NamedValue, len(args))
	for i, v := range args {
		nargs[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nargs
}
