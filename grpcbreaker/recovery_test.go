package grpcbreaker_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/internal/transporttest"
)

// TestClientAndServerInterceptors_recoverTogether measures how a client
// breaker (the unary client interceptor) and a server breaker (the unary
// server interceptor) readmit a dependency, the server's handler, that
// healed after a 20 s outage at 200 calls/s, on a real server on
// 127.0.0.1, both breakers reading one virtual clock: 10 runs, seeds 1 to
// 10, run at once. The scenario and the goal are httpbreaker's
// (transporttest.RecoverTogether): the first success within 0.15 s of
// healing, and 95 % of calls succeeding within 1 s, in every run.
func TestClientAndServerInterceptors_recoverTogether(t *testing.T) {
	transporttest.RecoverTogether(t, func(server, client *breaker.Registry) transporttest.Wire {
		done := make(chan struct{}, 1)
		signal := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			defer func() { done <- struct{}{} }() // the server has recorded the call
			return h(ctx, req)
		}
		es, addr := startServer(t, grpc.ChainUnaryInterceptor(signal,
			grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(server))))
		cc := dial(t, addr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(client))))
		value := "ok"
		return transporttest.Wire{
			SetDown: func(down bool) {
				value = "ok"
				if down {
					value = "code:13" // Internal
				}
			},
			Reached: es.received.Load,
			Call: func() bool {
				_, err := call(context.Background(), cc, value)
				if errors.Is(err, breaker.ErrServiceUnavailable) {
					return false // never sent
				}
				<-done
				return err == nil
			},
		}
	})
}
