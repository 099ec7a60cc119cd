// Package given declares the names that the code blocks of README.md and
// docs/*.md use without declaring them. docscheck copies this file into the
// package of every fragment it compiles (see the docscheck package comment),
// so each name here must be typed as the snippets use it.
package given

// Nothing in this package uses these names: the snippets do, in the
// packages docscheck generates.
//lint:file-ignore U1000 the names are used by the docs' snippets, compiled with a copy of this file

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	"github.com/srebreaker/srebreaker/breaker"
)

// The caller's context and a breaker.
var (
	ctx context.Context
	b   breaker.Breaker
)

// registry is a registry of the caller's own.
var registry *breaker.Registry

// A dependency to call: its base URL and a call to it.
var (
	paymentsURL  string
	callPayments func(ctx context.Context) error
	prefetch     func() error
)

// User, users and id: a typed call's result, the client that returns it and
// its argument.
type User struct{ Name string }

var (
	users interface {
		Get(ctx context.Context, id string) (User, error)
	}
	id string
)

// An HTTP handler and a server mux.
var (
	app  http.Handler
	next http.Handler
	mux  *http.ServeMux
)

// gRPC: the target of a client and its credentials.
var (
	target string
	creds  grpc.DialOption
)

// A database: its connection string, a driver's connector, a connection of
// a *sql.DB's pool, and rows to copy into it.
var (
	dsn       string
	connector driver.Connector
	conn      *sql.Conn
	rows      pgx.CopyFromSource
)

// rdb is a go-redis client: a single node, Sentinel or Cluster.
var rdb redis.UniversalClient

// provider is an OpenTelemetry MeterProvider.
var provider metric.MeterProvider
