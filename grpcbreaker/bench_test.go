package grpcbreaker_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
)

var (
	sinkResp any
	sinkErr  error
)

// BenchmarkServerInterceptors_Unary is what the unary server interceptor
// adds to a call it serves, with its overload limit on (the default) and
// off, against the handler called alone.
func BenchmarkServerInterceptors_Unary(b *testing.B) {
	handler := func(context.Context, any) (any, error) { return "pong", nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/test.Echo/Ping"}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		on   bool
		none bool
	}{{"none", false, true}, {"limit-on", true, false}, {"limit-off", false, false}} {
		b.Run(bc.name, func(b *testing.B) {
			call := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				return h(ctx, req)
			}
			if !bc.none {
				s, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(breaker.MustNewRegistry()),
					grpcbreaker.WithOverloadLimit(bc.on))
				if err != nil {
					b.Fatal(err)
				}
				call = s.Unary()
			}
			b.ReportAllocs()
			for b.Loop() {
				sinkResp, sinkErr = call(ctx, "ping", info, handler)
			}
		})
	}
}
