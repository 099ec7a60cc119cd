package grpcbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The examples run the test service (test.Echo, described by hand in
// helpers_test.go) on loopback; a mock clock and a seeded random source
// make their output reproducible, and real code leaves both at their
// defaults.

func exampleRegistry() *breaker.Registry {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return breaker.NewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
}

// exampleServer serves the test service on 127.0.0.1 with a port the
// system picks, and returns its address and a function that stops it.
func exampleServer(opts ...grpc.ServerOption) (*echoServer, string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(opts...)
	es := &echoServer{arrived: make(chan struct{}, 16)}
	srv.RegisterService(&echoDesc, es)
	go func() { _ = srv.Serve(ln) }()
	return es, ln.Addr().String(), srv.Stop
}

func ExampleUnaryClientInterceptor() {
	es, addr, stop := exampleServer()
	defer stop()

	unary, err := grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(exampleRegistry()))
	if err != nil {
		panic(err)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(unary))
	if err != nil {
		panic(err)
	}
	defer cc.Close()

	failed, shed := 0, 0
	for range 100 {
		// The server answers Unavailable to this request.
		err := cc.Invoke(context.Background(), "/test.Echo/Call",
			wrapperspb.String(fmt.Sprintf("code:%d", codes.Unavailable)), new(wrapperspb.StringValue))
		switch {
		case errors.Is(err, breaker.ErrServiceUnavailable): // also status code Unavailable
			shed++
		case err != nil:
			failed++
		}
	}
	fmt.Println("failed:", failed, "shed:", shed, "received by the server:", es.received.Load())
	// Output: failed: 21 shed: 79 received by the server: 21
}

func ExampleUnaryServerInterceptor() {
	unary, err := grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(exampleRegistry()))
	if err != nil {
		panic(err)
	}
	_, addr, stop := exampleServer(grpc.UnaryInterceptor(unary))
	defer stop()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer cc.Close()

	byCode := map[codes.Code]int{}
	for range 100 {
		// The handler fails with Internal.
		err := cc.Invoke(context.Background(), "/test.Echo/Call",
			wrapperspb.String(fmt.Sprintf("code:%d", codes.Internal)), new(wrapperspb.StringValue))
		byCode[status.Code(err)]++
	}
	fmt.Println(byCode)
	// Output: map[Internal:21 Unavailable:79]
}

func ExampleStreamClientInterceptor() {
	_, addr, stop := exampleServer()
	defer stop()

	reg := exampleRegistry()
	stream, err := grpcbreaker.StreamClientInterceptor(grpcbreaker.WithRegistry(reg))
	if err != nil {
		panic(err)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStreamInterceptor(stream))
	if err != nil {
		panic(err)
	}
	defer cc.Close()

	// A server stream of three messages: the breaker records the call once,
	// when RecvMsg reports the end.
	s, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/test.Echo/List")
	if err != nil {
		panic(err)
	}
	_ = s.SendMsg(wrapperspb.String("n:3"))
	_ = s.CloseSend()
	for {
		msg := new(wrapperspb.StringValue)
		if err := s.RecvMsg(msg); err != nil {
			fmt.Println("end:", err)
			break
		}
		fmt.Println("message", msg.GetValue())
	}
	// Output:
	// message 0
	// message 1
	// message 2
	// end: EOF
}
