package sqlbreaker_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"testing"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

// sinkInt keeps the benchmarks' results alive.
var sinkInt int

// BenchmarkBreaker_AllowAccept is what the wrapper adds at the least: the
// breaker's own AllowCtx and Accept, as the wrapper calls them.
func BenchmarkBreaker_AllowAccept(b *testing.B) {
	br := breaker.MustNew(breaker.WithName("bench"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.AllowCtx(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Accept()
	}
}

// BenchmarkQuery_fake runs a query that returns one row through
// database/sql on the in-process fake driver, bare and wrapped, to isolate
// what the wrapper costs.
func BenchmarkQuery_fake(b *testing.B) {
	benchQuery(b, func() *sql.DB { return sql.OpenDB(&fakeServer{bench: true}) },
		func() *sql.DB { return sql.OpenDB(must(sqlbreaker.Wrap(&fakeServer{bench: true}))) }, "q")
}

// BenchmarkExec_fake is BenchmarkQuery_fake for an exec.
func BenchmarkExec_fake(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		open func() *sql.DB
	}{
		{"bare", func() *sql.DB { return sql.OpenDB(&fakeServer{bench: true}) }},
		{"wrapped", func() *sql.DB { return sql.OpenDB(must(sqlbreaker.Wrap(&fakeServer{bench: true}))) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			db := c.open()
			defer db.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.ExecContext(ctx, "x"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchQuery runs query on the databases bare and wrapped open, side by
// side.
func benchQuery(b *testing.B, bare, wrapped func() *sql.DB, query string) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		open func() *sql.DB
	}{{"bare", bare}, {"wrapped", wrapped}} {
		b.Run(c.name, func(b *testing.B) {
			db := c.open()
			defer db.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := db.QueryRowContext(ctx, query).Scan(&sinkInt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConn_QueryContext calls QueryContext on a driver connection of
// the fake, bare and wrapped, without database/sql around it: the
// difference is what the wrapper costs a call, to compare with
// BenchmarkBreaker_AllowAccept.
func BenchmarkConn_QueryContext(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		connector driver.Connector
	}{{"bare", &fakeServer{bench: true}}, {"wrapped", must(sqlbreaker.Wrap(&fakeServer{bench: true}))}} {
		b.Run(c.name, func(b *testing.B) {
			conn, err := c.connector.Connect(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			q := conn.(driver.QueryerContext)
			b.ReportAllocs()
			for b.Loop() {
				rows, err := q.QueryContext(ctx, "q", nil)
				if err != nil {
					b.Fatal(err)
				}
				sinkRows = rows
			}
		})
	}
}

// sinkRows keeps BenchmarkConn_QueryContext's rows alive.
var sinkRows driver.Rows
