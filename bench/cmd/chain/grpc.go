package main

import (
	"context"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/grpcbreaker"
)

// method is the one method of every server of the chain, bench.Chain/Call,
// described by hand; its messages are wrapperspb.StringValue.
const method = "/bench.Chain/Call"

// grpcChain is the chain over gRPC: server and client interceptors.
func grpcChain(c *dependency, a, b, client *process) (func(time.Duration) error, func(), error) {
	var servers []*grpc.Server
	var conns []*grpc.ClientConn
	stop := func() {
		for _, cc := range conns {
			_ = cc.Close()
		}
		for _, s := range servers {
			s.Stop()
		}
	}
	serve := func(h func(context.Context) error, opts ...grpc.ServerOption) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		s := grpc.NewServer(opts...)
		s.RegisterService(&grpc.ServiceDesc{
			ServiceName: "bench.Chain",
			HandlerType: (*any)(nil),
			Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: func(_ any, ctx context.Context, dec func(any) error,
				interceptor grpc.UnaryServerInterceptor) (any, error) {
				in := new(wrapperspb.StringValue)
				if err := dec(in); err != nil {
					return nil, err
				}
				handler := func(ctx context.Context, _ any) (any, error) {
					if err := h(ctx); err != nil {
						return nil, err
					}
					return wrapperspb.String("ok"), nil
				}
				if interceptor == nil {
					return handler(ctx, in)
				}
				return interceptor(ctx, in, &grpc.UnaryServerInfo{FullMethod: method}, handler)
			}}},
		}, struct{}{})
		servers = append(servers, s)
		go func() { _ = s.Serve(ln) }()
		return ln.Addr().String(), nil
	}
	dial := func(p *process, addr string) (func(context.Context) error, error) {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithUnaryInterceptor(must(grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(p.reg))).Unary()))
		if err != nil {
			return nil, err
		}
		conns = append(conns, cc)
		return func(ctx context.Context) error {
			return cc.Invoke(ctx, method, wrapperspb.String("call"), new(wrapperspb.StringValue))
		}, nil
	}
	// relay serves calls that call next through p's client interceptors,
	// and fail with Unavailable when that call fails.
	relay := func(p *process, next string) (string, error) {
		do, err := dial(p, next)
		if err != nil {
			return "", err
		}
		return serve(func(ctx context.Context) error {
			if err := do(ctx); err != nil {
				return status.Error(codes.Unavailable, "dependency failed")
			}
			return nil
		}, grpc.UnaryInterceptor(must(grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(p.reg))).Unary()))
	}

	cAddr, err := serve(func(ctx context.Context) error {
		c.reached.Add(1)
		if c.hangs(ctx) {
			return status.FromContextError(ctx.Err()).Err()
		}
		if c.down.Load() {
			return status.Error(codes.Unavailable, "dependency C is down")
		}
		return nil
	})
	if err != nil {
		stop()
		return nil, nil, err
	}
	bAddr, err := relay(b, cAddr)
	if err != nil {
		stop()
		return nil, nil, err
	}
	aAddr, err := relay(a, bAddr)
	if err != nil {
		stop()
		return nil, nil, err
	}
	do, err := dial(client, aAddr)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return func(deadline time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		return do(ctx)
	}, stop, nil
}

// must returns v, or panics with err: for options written in code.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
