package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/connectbreaker"
)

type msg = wrapperspb.StringValue

// connectChain is the chain over Connect's own protocol on HTTP/1.1:
// HandlerInterceptors and ClientInterceptors.
func connectChain(c *dependency, a, b, client *process) (func(time.Duration) error, func(), error) {
	var servers []*http.Server
	var transports []*http.Transport
	stop := func() {
		for _, s := range servers {
			_ = s.Close()
		}
		for _, t := range transports {
			t.CloseIdleConnections()
		}
	}
	serve := func(h func(context.Context) error, opts ...connect.HandlerOption) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		mux := http.NewServeMux()
		mux.Handle(method, connect.NewUnaryHandler(method,
			func(ctx context.Context, _ *connect.Request[msg]) (*connect.Response[msg], error) {
				if err := h(ctx); err != nil {
					return nil, err
				}
				return connect.NewResponse(wrapperspb.String("ok")), nil
			}, opts...))
		s := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, s)
		go func() { _ = s.Serve(ln) }()
		return "http://" + ln.Addr().String(), nil
	}
	dial := func(p *process, base string) func(context.Context) error {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 256
		transports = append(transports, t)
		cl := connect.NewClient[msg, msg](&http.Client{Transport: t}, base+method, connect.WithInterceptors(
			connectbreaker.MustNewClientInterceptor(connectbreaker.WithRegistry(p.reg))))
		return func(ctx context.Context) error {
			_, err := cl.CallUnary(ctx, connect.NewRequest(wrapperspb.String("call")))
			return err
		}
	}
	// relay serves calls that call next through p's ClientInterceptor,
	// and fail with unavailable when that call fails.
	relay := func(p *process, next string) (string, error) {
		do := dial(p, next)
		return serve(func(ctx context.Context) error {
			if err := do(ctx); err != nil {
				return connect.NewError(connect.CodeUnavailable, errors.New("dependency failed"))
			}
			return nil
		}, connect.WithInterceptors(connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(p.reg))))
	}

	cURL, err := serve(func(ctx context.Context) error {
		c.reached.Add(1)
		if c.hangs(ctx) {
			return connect.NewError(connect.CodeDeadlineExceeded, ctx.Err())
		}
		if c.down.Load() {
			return connect.NewError(connect.CodeUnavailable, errors.New("dependency C is down"))
		}
		return nil
	})
	if err != nil {
		stop()
		return nil, nil, err
	}
	bURL, err := relay(b, cURL)
	if err != nil {
		stop()
		return nil, nil, err
	}
	aURL, err := relay(a, bURL)
	if err != nil {
		stop()
		return nil, nil, err
	}
	do := dial(client, aURL)
	return func(deadline time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		return do(ctx)
	}, stop, nil
}
