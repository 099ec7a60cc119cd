// Command consumer uses the core and each published nested module the way a
// program that depends on them does. make release-check builds it in a
// module of its own, outside the repository, against the candidate versions
// fetched through a module proxy, and runs it: it prints one line per module
// and exits non-zero if any of them does not work.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/otelbreaker"
	"github.com/srebreaker/srebreaker/prombreaker"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	registry := breaker.NewRegistry()
	failed := false
	for _, check := range []struct {
		module string
		run    func(context.Context, *breaker.Registry) error
	}{
		{"github.com/srebreaker/srebreaker", checkCore},
		{"github.com/srebreaker/srebreaker/grpcbreaker", checkGRPC},
		{"github.com/srebreaker/srebreaker/prombreaker", checkPrometheus},
		{"github.com/srebreaker/srebreaker/otelbreaker", checkOTel},
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
	serverUnary := grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(registry))
	clientUnary := grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(registry))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(serverUnary))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }() // returns when Stop closes the listener
	defer srv.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(clientUnary))
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
