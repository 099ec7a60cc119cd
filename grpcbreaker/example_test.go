package grpcbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The examples run a real gRPC server on loopback. Each gives its
// interceptors a registry whose breakers read a mock clock and a seeded
// random source, so that the output is reproducible; real code leaves out
// WithRegistry, and its breakers live in breaker.DefaultRegistry().

func ExampleClientInterceptors_Unary() {
	// A server that answers every call with Unavailable.
	var received atomic.Int64
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
		received.Add(1)
		return status.Error(codes.Unavailable, "overloaded")
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	interceptors, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(registry))
	if err != nil {
		panic(err)
	}
	cc, err := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(interceptors.Unary()))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	failed, shed := 0, 0
	for range 100 {
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
		switch {
		case errors.Is(err, breaker.ErrServiceUnavailable): // also status code Unavailable
			shed++
		case err != nil:
			failed++
		}
	}
	fmt.Println("failed:", failed, "shed:", shed, "received by the server:", received.Load())
	// Output: failed: 21 shed: 79 received by the server: 21
}

func ExampleServerInterceptors_Unary() {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	// The interceptor after the breaker's stands in for a failing handler.
	failing := func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
		return nil, status.Error(codes.Internal, "database unreachable")
	}
	interceptors, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(registry))
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors.Unary(), failing))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	byCode := map[codes.Code]int{}
	for range 100 {
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
		byCode[status.Code(err)]++
	}
	fmt.Println(byCode)
	registry.Range(func(name string, _ breaker.Breaker) bool {
		fmt.Println("the server's breaker:", name)
		return true
	})
	// Output:
	// map[Internal:21 Unavailable:79]
	// the server's breaker: server:/grpc.health.v1.Health/Check
}

func ExampleClientInterceptors_Stream() {
	// A server that answers every stream with three messages.
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		for i := range 3 {
			if err := ss.SendMsg(wrapperspb.Int64(int64(i))); err != nil {
				return err
			}
		}
		return nil
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	registry := breaker.MustNewRegistry()
	interceptors, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(registry))
	if err != nil {
		panic(err)
	}
	cc, err := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStreamInterceptor(interceptors.Stream()))
	if err != nil {
		panic(err)
	}
	defer cc.Close()

	// A server stream: the breaker records the call once, when RecvMsg
	// reports the end.
	s, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/numbers.Numbers/List")
	if err != nil {
		panic(err)
	}
	_ = s.CloseSend()
	for {
		msg := new(wrapperspb.Int64Value)
		if err := s.RecvMsg(msg); err != nil {
			fmt.Println("end:", err)
			break
		}
		fmt.Println("message", msg.GetValue())
	}
	st := (registry.Get(ln.Addr().String() + "/numbers.Numbers/List")).Stats()
	fmt.Println("successes:", st.TotalSuccesses)
	// Output:
	// message 0
	// message 1
	// message 2
	// end: EOF
	// successes: 1
}

func ExampleDefaultKey() {
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	// Three ways of writing one target: one breaker.
	registry := breaker.MustNewRegistry()
	interceptors, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(registry))
	if err != nil {
		panic(err)
	}
	addr := ln.Addr().String()
	for _, target := range []string{addr, "dns:///" + addr, "passthrough:///" + addr} {
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithUnaryInterceptor(interceptors.Unary()))
		if err != nil {
			panic(err)
		}
		if _, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
			panic(err)
		}
		cc.Close()
	}
	registry.Range(func(name string, b breaker.Breaker) bool {
		s := b.Stats()
		fmt.Println(strings.Replace(name, addr, "127.0.0.1:PORT", 1), "successes:", s.TotalSuccesses)
		return true
	})
	// Output: 127.0.0.1:PORT/grpc.health.v1.Health/Check successes: 3
}

func ExampleWithCriticalityPolicy() {
	// At the edge, anyone can send the metadata: the server decides, here by
	// method, and what clients claim is ignored.
	byMethod := grpcbreaker.LevelFunc(func(_ context.Context, fullMethod string) criticality.Level {
		if strings.HasPrefix(fullMethod, "/shop.Prefetch/") {
			return criticality.Sheddable
		}
		return criticality.Critical
	})
	unary := func(opts ...grpcbreaker.ServerOption) grpc.UnaryServerInterceptor {
		interceptors, err := grpcbreaker.NewServerInterceptors(opts...)
		if err != nil {
			panic(err)
		}
		return interceptors.Unary()
	}
	servers := []struct {
		name        string
		interceptor grpc.UnaryServerInterceptor
	}{
		{"edge", unary(grpcbreaker.WithRegistry(breaker.MustNewRegistry()), grpcbreaker.WithCriticalityPolicy(byMethod))},
		// Behind the edge, only trusted services call: their metadata counts.
		{"internal", unary(grpcbreaker.WithRegistry(breaker.MustNewRegistry()),
			grpcbreaker.WithCriticalityPolicy(grpcbreaker.TrustMetadata(criticality.CriticalPlus)))},
		// Without the option, no metadata counts.
		{"default", unary(grpcbreaker.WithRegistry(breaker.MustNewRegistry()))},
	}
	// The handler answers with the level it is served at; the interceptors
	// are called as a server calls them, with a client's claim in the
	// incoming metadata.
	handler := func(ctx context.Context, _ any) (any, error) { return criticality.From(ctx), nil }
	claim := metadata.NewIncomingContext(context.Background(),
		metadata.Pairs(grpcbreaker.CriticalityKey, "CRITICAL_PLUS"))
	for _, s := range servers {
		for _, method := range []string{"/shop.Checkout/Pay", "/shop.Prefetch/Cart"} {
			level, err := s.interceptor(claim, nil, &grpc.UnaryServerInfo{FullMethod: method}, handler)
			fmt.Printf("%-8s %-19s %v %v\n", s.name, method, level, err)
		}
	}
	// Output:
	// edge     /shop.Checkout/Pay  CRITICAL <nil>
	// edge     /shop.Prefetch/Cart SHEDDABLE <nil>
	// internal /shop.Checkout/Pay  CRITICAL_PLUS <nil>
	// internal /shop.Prefetch/Cart CRITICAL_PLUS <nil>
	// default  /shop.Checkout/Pay  CRITICAL <nil>
	// default  /shop.Prefetch/Cart CRITICAL <nil>
}
