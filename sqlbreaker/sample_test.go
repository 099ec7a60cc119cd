package sqlbreaker_test

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/docsample"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

var update = flag.Bool("update", false, "rewrite the guide's samples from what the code prints")

// The error text of a dropped call that docs/guide/sql.md shows is the
// one a wrapped pgx connector gives once PostgreSQL refuses its
// connections: a port on loopback where nothing listens, written as
// PostgreSQL's.
func TestSample_dropError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	cfg, err := pgx.ParseConfig("postgres://app@" + addr + "/orders?sslmode=disable&connect_timeout=5")
	require.NoError(t, err)
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := breaker.MustNew(breaker.WithName("orders-db"), breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
	connector, err := sqlbreaker.Wrap(stdlib.GetConnector(*cfg), sqlbreaker.WithBreaker(b))
	require.NoError(t, err)
	db := sql.OpenDB(connector)
	defer db.Close()

	for range 100 {
		err = db.PingContext(context.Background())
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			break
		}
	}
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	_, port, err2 := net.SplitHostPort(addr)
	require.NoError(t, err2)
	text := strings.ReplaceAll(err.Error(), ":"+port, ":5432")
	docsample.Check(t, "../docs/guide/sql.md", "drop-error", text, *update)
}
