package docscheck

// The packages of [Imports], imported here so that go.mod requires the
// modules that provide them (TestImports_areRequired keeps the two lists
// the same).
import (
	_ "context"
	_ "database/sql"
	_ "database/sql/driver"
	_ "errors"
	_ "expvar"
	_ "fmt"
	_ "io"
	_ "log"
	_ "log/slog"
	_ "net/http"
	_ "os"
	_ "strings"
	_ "time"

	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/redis/go-redis/v9"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/metric"
	_ "go.opentelemetry.io/otel/sdk/metric"
	_ "google.golang.org/grpc"
	_ "google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/status"

	_ "github.com/srebreaker/srebreaker"
	_ "github.com/srebreaker/srebreaker/breaker"
	_ "github.com/srebreaker/srebreaker/criticality"
	_ "github.com/srebreaker/srebreaker/expvarbreaker"
	_ "github.com/srebreaker/srebreaker/goredisbreaker"
	_ "github.com/srebreaker/srebreaker/grpcbreaker"
	_ "github.com/srebreaker/srebreaker/httpbreaker"
	_ "github.com/srebreaker/srebreaker/otelbreaker"
	_ "github.com/srebreaker/srebreaker/proba"
	_ "github.com/srebreaker/srebreaker/prombreaker"
	_ "github.com/srebreaker/srebreaker/redisbreaker"
	_ "github.com/srebreaker/srebreaker/sqlbreaker"
	_ "github.com/srebreaker/srebreaker/statuspage"
)
