package connectbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/benbjohnson/clock"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The examples run a real Connect server on loopback. Each gives its
// interceptors a registry whose breakers read a mock clock and a seeded
// random source, so that the output is reproducible; real code leaves out
// WithRegistry, and its breakers live in breaker.DefaultRegistry().

// exampleServer serves h at procedure on 127.0.0.1, over HTTP/1.1, and
// returns its base URL and a function that stops it.
func exampleServer(procedure string, h http.Handler) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle(procedure, h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }
}

// exampleRegistry is a registry whose breakers read a mock clock and a
// seeded random source.
func exampleRegistry() *breaker.Registry {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
}

func ExampleClientInterceptor() {
	// A server that answers every call with unavailable.
	var received atomic.Int64
	base, stop := exampleServer("/ping.v1.PingService/Ping", connect.NewUnaryHandler("/ping.v1.PingService/Ping",
		func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			received.Add(1)
			return nil, connect.NewError(connect.CodeUnavailable, errors.New("overloaded"))
		}))
	defer stop()

	ci, err := connectbreaker.NewClientInterceptor(connectbreaker.WithRegistry(exampleRegistry()))
	if err != nil {
		panic(err)
	}
	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](http.DefaultClient,
		base+"/ping.v1.PingService/Ping", connect.WithGRPCWeb(), connect.WithInterceptors(ci))

	failed, shed := 0, 0
	for range 100 {
		_, err := client.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("ping")))
		switch {
		case errors.Is(err, breaker.ErrServiceUnavailable): // also code unavailable
			shed++
		case err != nil:
			failed++
		}
	}
	fmt.Println("failed:", failed, "shed:", shed, "received by the server:", received.Load())
	// Output: failed: 21 shed: 79 received by the server: 21
}

func ExampleHandlerInterceptor() {
	// A handler whose dependency is down: every call fails with internal.
	var received atomic.Int64
	hi, err := connectbreaker.NewHandlerInterceptor(connectbreaker.WithRegistry(exampleRegistry()))
	if err != nil {
		panic(err)
	}
	base, stop := exampleServer("/ping.v1.PingService/Ping", connect.NewUnaryHandler("/ping.v1.PingService/Ping",
		func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			received.Add(1)
			return nil, connect.NewError(connect.CodeInternal, errors.New("database down"))
		}, connect.WithInterceptors(hi)))
	defer stop()

	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](http.DefaultClient,
		base+"/ping.v1.PingService/Ping")
	var last error
	shed := 0
	for range 100 {
		_, err := client.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("ping")))
		if connect.CodeOf(err) == connect.CodeUnavailable {
			shed++
			last = err
		}
	}
	fmt.Println("shed:", shed, "served:", received.Load())
	fmt.Println(last)
	fmt.Println("shed by a server:", connectbreaker.ShedByServer(last), "advice:",
		last.(*connect.Error).Meta().Get(connectbreaker.RetryHeader))
	// Output:
	// shed: 79 served: 21
	// unavailable: connectbreaker: call shed by the server's breaker: the server is overloaded, retry later
	// shed by a server: true advice: later
}
