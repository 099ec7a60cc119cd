//go:build unix

package sqlbreaker_test

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

// BenchmarkQuery_postgres runs SELECT 1 on a PostgreSQL server on
// loopback through pgx's database/sql driver, bare and wrapped, one after
// the other against the same server.
func BenchmarkQuery_postgres(b *testing.B) {
	pg := startPostgres(b)
	cfg, err := pgx.ParseConfig(pg.dsn())
	require.NoError(b, err)
	benchQuery(b, func() *sql.DB { return sql.OpenDB(stdlib.GetConnector(*cfg)) },
		func() *sql.DB {
			return sql.OpenDB(must(sqlbreaker.Wrap(stdlib.GetConnector(*cfg), sqlbreaker.WithBreaker(breaker.MustNew()))))
		}, "SELECT 1")
}
