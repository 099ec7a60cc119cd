package grpcbreaker_test

import (
	"context"
	"fmt"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// A server interceptor whose breaker sheds tells the client what to do
// about it; the client interceptors leave such an answer out of their own
// breaker. Here the interceptor is called directly, with retries: once most
// of what it sheds is a retry, it says "don't retry".
func ExampleShedByServer() {
	m := clock.NewMock()
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	const method = "/pkg.Service/Method"
	b := reg.Get(grpcbreaker.DefaultKey(context.Background(), "", method))
	for i := 0; i < 100; { // the handler has failed 100 times
		if p, err := b.Allow(); err == nil {
			p.Reject("down")
			i++
		}
	}
	interceptors, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(reg))
	if err != nil {
		panic(err)
	}
	intercept := interceptors.Unary()
	info := &grpc.UnaryServerInfo{FullMethod: method}
	handler := func(context.Context, any) (any, error) { return "served", nil }

	// The third attempt of a call: two went before it.
	retry := metadata.NewIncomingContext(context.Background(), metadata.Pairs("grpc-previous-rpc-attempts", "2"))
	for sheds := 0; sheds < 10; {
		if _, err = intercept(retry, nil, info, handler); err != nil {
			sheds++
		}
	}
	fmt.Println(status.Code(err))
	fmt.Println("shed by the server:", grpcbreaker.ShedByServer(err))
	fmt.Println("don't retry:", grpcbreaker.RetryRefused(err))
	// Output:
	// Unavailable
	// shed by the server: true
	// don't retry: true
}
