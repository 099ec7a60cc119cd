package connectbreaker_test

import (
	"context"
	"errors"
	"testing"

	"connectrpc.com/connect"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/internal/transporttest"
)

// TestClientAndHandlerInterceptors_recoverTogether measures how a client
// breaker (the ClientInterceptor) and a server breaker (the
// HandlerInterceptor) readmit a dependency, the handler, that healed after
// a 20 s outage at 200 calls/s, on a real server on 127.0.0.1, both
// breakers reading one virtual clock: 10 runs, seeds 1 to 10, run at once,
// for each protocol. The scenario and the goal are those of httpbreaker
// and grpcbreaker (transporttest.RecoverTogether): the first success
// within 0.15 s of healing, and 95 % of calls succeeding within 1 s, in
// every run. The protocols run at once.
func TestClientAndHandlerInterceptors_recoverTogether(t *testing.T) {
	if raceEnabled {
		// A measurement: its 150,000 calls, one after the other in each
		// run, take most of ten minutes under the race detector on a
		// shared 2-core machine, and race nothing the other tests do not.
		t.Skip("a measurement, not run under the race detector")
	}
	for _, w := range []wire{wires[4], wires[0], wires[2]} { // grpc/h2c, connect/h1, grpcweb/h1
		t.Run(w.name, func(t *testing.T) {
			t.Parallel() // most of a run's time is the mock clock's pauses
			transporttest.RecoverTogether(t, func(server, client *breaker.Registry) transporttest.Wire {
				done := make(chan struct{}, 1)
				signal := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
					return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
						defer func() { done <- struct{}{} }() // the server has recorded the call
						return next(ctx, req)
					}
				})
				es, base := startServer(t, connect.WithInterceptors(signal,
					connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(server))))
				cs := newClients(t, w, base, connect.WithInterceptors(
					connectbreaker.MustNewClientInterceptor(connectbreaker.WithRegistry(client))))
				value := "ok"
				return transporttest.Wire{
					SetDown: func(down bool) {
						value = "ok"
						if down {
							value = "code:13" // internal
						}
					},
					Reached: es.received.Load,
					Call: func() bool {
						_, err := cs.unary(context.Background(), value)
						if errors.Is(err, breaker.ErrServiceUnavailable) {
							return false // never sent
						}
						<-done
						return err == nil
					},
				}
			})
		})
	}
}
