// Command consumer uses the core and each published nested module the way a
// program that depends on them does. make release-check builds it in a
// module of its own, outside the repository, against the candidate versions
// fetched through a module proxy, and runs it: it prints one line per module
// and exits non-zero if any of them does not work.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/goredisbreaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/otelbreaker"
	"github.com/srebreaker/srebreaker/prombreaker"
	"github.com/srebreaker/srebreaker/redisbreaker"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	registry := breaker.MustNewRegistry()
	failed := false
	for _, check := range []struct {
		module string
		run    func(context.Context, *breaker.Registry) error
	}{
		{"github.com/srebreaker/srebreaker", checkCore},
		{"github.com/srebreaker/srebreaker/grpcbreaker", checkGRPC},
		{"github.com/srebreaker/srebreaker/prombreaker", checkPrometheus},
		{"github.com/srebreaker/srebreaker/otelbreaker", checkOTel},
		{"github.com/srebreaker/srebreaker/redisbreaker", checkRedis},
		{"github.com/srebreaker/srebreaker/goredisbreaker", checkGoRedis},
		{"github.com/srebreaker/srebreaker/sqlbreaker", checkSQL},
		{"github.com/srebreaker/srebreaker/connectbreaker", checkConnect},
	} {
		if err := check.run(ctx, registry); err != nil {
			fmt.Printf("FAIL %s: %v\n", check.module, err)
			failed = true
			continue
		}
		fmt.Printf("ok   %s\n", check.module)
	}
	if failed {
		os.Exit(1)
	}
}

// checkCore admits a call to a healthy dependency, then sheds calls to a dead one.
func checkCore(_ context.Context, registry *breaker.Registry) error {
	if err := registry.Get("healthy").Do(func() error { return nil }); err != nil {
		return fmt.Errorf("a healthy call: %w", err)
	}
	dead, down := registry.Get("dead"), errors.New("down")
	for range 1000 {
		if err := dead.Do(func() error { return down }); errors.Is(err, breaker.ErrServiceUnavailable) {
			return nil
		}
	}
	return errors.New("1000 failing calls in a row, and none was shed")
}

// checkGRPC calls gRPC's health service on loopback through the client and
// server interceptors.
func checkGRPC(ctx context.Context, registry *breaker.Registry) error {
	server, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(registry))
	if err != nil {
		return err
	}
	client, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(registry))
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(server.Unary()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }() // returns when Stop closes the listener
	defer srv.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(client.Unary()))
	if err != nil {
		return err
	}
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health status %v, want SERVING", resp.GetStatus())
	}
	return nil
}

// checkPrometheus scrapes the registry's breakers.
func checkPrometheus(_ context.Context, registry *breaker.Registry) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(prombreaker.MustNewCollector(registry)); err != nil {
		return err
	}
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, f := range families {
		if f.GetName() == "srebreaker_requests_total" && len(f.GetMetric()) >= 3 {
			return nil
		}
	}
	return errors.New("no srebreaker_requests_total of the three breakers in the scrape")
}

// checkOTel collects the registry's breakers through an SDK meter provider.
func checkOTel(ctx context.Context, registry *breaker.Registry) error {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = provider.Shutdown(ctx) }()
	reg, err := otelbreaker.Register(registry, otelbreaker.WithMeterProvider(provider))
	if err != nil {
		return err
	}
	defer func() { _ = reg.Unregister() }()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "srebreaker.requests" {
				return nil
			}
		}
	}
	return errors.New("no srebreaker.requests in the collection")
}

// checkRedis shares a breaker's counts between two sharers, as two
// processes would, through a redis-server it starts on loopback (make
// release-check installs Debian's package): the failures one sees make the
// other shed.
func checkRedis(ctx context.Context, _ *breaker.Registry) error {
	addr, stop, err := startRedis(ctx)
	if err != nil {
		return err
	}
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	sharers := make([]*redisbreaker.Sharer, 2)
	breakers := make([]breaker.Breaker, 2)
	for i := range sharers {
		s, err := redisbreaker.New(rdb)
		if err != nil {
			return err
		}
		defer s.Close()
		breakers[i] = breaker.MustNew(breaker.WithName("shared"))
		if err := s.Share(breakers[i]); err != nil {
			return err
		}
		sharers[i] = s
	}
	for range 50 { // process 1's calls fail
		if p, err := breakers[1].Allow(); err == nil {
			p.Reject("down")
		}
	}
	for _, s := range []*redisbreaker.Sharer{sharers[1], sharers[0]} {
		if err := s.Sync(ctx); err != nil {
			return err
		}
	}
	if s := breakers[0].Stats(); s.DropProbability == 0 {
		return errors.New("process 0 does not shed on process 1's failures")
	}
	return nil
}

// checkGoRedis sends commands through a go-redis client with a breaker in
// front of it, to a redis-server it starts on loopback: a missing key is a
// success of the node's breaker.
func checkGoRedis(ctx context.Context, registry *breaker.Registry) error {
	addr, stop, err := startRedis(ctx)
	if err != nil {
		return err
	}
	defer stop()

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if err := goredisbreaker.Instrument(rdb, goredisbreaker.WithRegistry(registry)); err != nil {
		return err
	}
	if err := rdb.Get(ctx, "missing").Err(); !errors.Is(err, redis.Nil) {
		return fmt.Errorf("GET of a missing key: %v, want redis.Nil", err)
	}
	s := (registry.Get(goredisbreaker.DefaultKey(addr))).Stats()
	if s.Successes != 1 || s.Failures != 0 {
		return fmt.Errorf("the node's breaker counts %d successes and %d failures, want 1 and 0", s.Successes, s.Failures)
	}
	return nil
}

// startRedis starts a redis-server on a free loopback port (make
// release-check installs Debian's package) and returns its address and a
// function that stops it.
func startRedis(ctx context.Context) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr = l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	cmd := exec.CommandContext(ctx, "redis-server", "--bind", "127.0.0.1", "--port", port,
		"--save", "", "--appendonly", "no", "--dir", os.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("redis-server: %w", err)
	}
	ready := bufio.NewScanner(out)
	for ready.Scan() && !strings.Contains(ready.Text(), "Ready to accept connections") {
	}
	go func() { // drain its log until it exits
		for ready.Scan() {
		}
	}()
	return addr, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }, nil
}

// checkSQL opens a database/sql database on a connector whose server is
// down, guarded by a breaker of the registry: the breaker sheds.
func checkSQL(ctx context.Context, registry *breaker.Registry) error {
	guarded, err := sqlbreaker.Wrap(downConnector{}, sqlbreaker.WithBreaker(registry.Get("database")))
	if err != nil {
		return err
	}
	db := sql.OpenDB(guarded)
	defer db.Close()
	for range 1000 {
		if err := db.PingContext(ctx); errors.Is(err, breaker.ErrServiceUnavailable) {
			return nil
		}
	}
	return errors.New("1000 failed connections in a row, and none was shed")
}

// downConnector is the driver.Connector of a server that refuses
// connections.
type downConnector struct{}

func (downConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("connection refused")
}

func (c downConnector) Driver() driver.Driver { return downDriver{c} }

type downDriver struct{ c downConnector }

func (d downDriver) Open(string) (driver.Conn, error) { return d.c.Connect(context.Background()) }

// checkConnect makes a unary call of the Connect protocol on loopback
// through the client and handler interceptors.
func checkConnect(ctx context.Context, registry *breaker.Registry) error {
	const procedure = "/consumer.v1.Echo/Echo"
	hi, err := connectbreaker.NewHandlerInterceptor(connectbreaker.WithRegistry(registry))
	if err != nil {
		return err
	}
	ci, err := connectbreaker.NewClientInterceptor(connectbreaker.WithRegistry(registry))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(procedure, connect.NewUnaryHandler(procedure,
		func(_ context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			return connect.NewResponse(req.Msg), nil
		}, connect.WithInterceptors(hi)))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }() // returns when Close closes the listener
	defer srv.Close()

	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](http.DefaultClient,
		"http://"+lis.Addr().String()+procedure, connect.WithInterceptors(ci))
	resp, err := client.CallUnary(ctx, connect.NewRequest(wrapperspb.String("ping")))
	if err != nil {
		return err
	}
	if resp.Msg.GetValue() != "ping" {
		return fmt.Errorf("answer %q, want ping", resp.Msg.GetValue())
	}
	return nil
}
