package connectbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/override"
)

// relayProcedure is the one procedure of test.Relay: its handler calls
// next with the value it got, and fails with an error of its own,
// unavailable without details, when that call fails. Its value, a
// comma-separated list, may also say:
//
//	"own"    fail with internal without calling anything
//	"panic"  panic after the call
const relayProcedure = "/test.Relay/Call"

var relayKey = connectbreaker.DefaultKey(context.Background(), "", relayProcedure)

// startRelay runs a test.Relay, guarded by a HandlerInterceptor of reg,
// that calls url through a ClientInterceptor of reg over HTTP/1.1, and
// returns its base URL.
func startRelay(t *testing.T, reg *countingRegistry, url string) string {
	t.Helper()
	w := wires[0]
	next := connect.NewClient[msg, msg](w.httpClient(t), url, w.options(connect.WithInterceptors(
		connectbreaker.MustNewClientInterceptor(connectbreaker.WithBreakers(reg.Get))))...)
	mux := http.NewServeMux()
	mux.Handle(relayProcedure, connect.NewUnaryHandler(relayProcedure,
		func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
			v := req.Msg.GetValue()
			if strings.Contains(v, "own") {
				return nil, connect.NewError(connect.CodeInternal, errors.New("the relay's own failure"))
			}
			resp, err := next.CallUnary(ctx, connect.NewRequest(wrapperspb.String(v)))
			if strings.Contains(v, "panic") {
				panic("relay bug")
			}
			if err != nil {
				return nil, connect.NewError(connect.CodeUnavailable, errors.New("dependency failed"))
			}
			return connect.NewResponse(resp.Msg), nil
		}, connect.WithInterceptors(connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithBreakers(reg.Get)))))
	mux.Handle(relayListProcedure, connect.NewServerStreamHandler(relayListProcedure,
		func(ctx context.Context, req *connect.Request[msg], stream *connect.ServerStream[msg]) error {
			if _, err := next.CallUnary(ctx, connect.NewRequest(req.Msg)); err != nil {
				return connect.NewError(connect.CodeUnavailable, errors.New("dependency failed"))
			}
			return stream.Send(wrapperspb.String("ok"))
		}, connect.WithInterceptors(connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithBreakers(reg.Get)))))
	return serve(t, mux)
}

// relayListProcedure is test.Relay's server stream: it calls next as Call
// does, and fails as Call does.
const relayListProcedure = "/test.Relay/List"

// callRelay calls test.Relay at base with value v, through opts.
func callRelay(t *testing.T, base, v string, opts ...connect.ClientOption) error {
	w := wires[0]
	c := connect.NewClient[msg, msg](w.httpClient(t), base+relayProcedure, w.options(opts...)...)
	_, err := c.CallUnary(t.Context(), connect.NewRequest(wrapperspb.String(v)))
	return err
}

func TestHandlerInterceptor_WrapUnary_dependencyFailureIsIgnoredAndAdvised(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	a := startRelay(t, reg, c+callProcedure)

	err := callRelay(t, a, "code:14")
	assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
	assert.True(t, connectbreaker.ShedByServer(err), "the answer carries the advice")
	assert.Equal(t, [3]int64{0, 0, 1}, reg.Outcomes(relayKey), "the server's breaker counts neither")
	assert.Equal(t, [3]int64{0, 1, 0}, reg.Outcomes(strings.TrimPrefix(c, "http://")+callProcedure),
		"the dependency's breaker counts the failure")
}

func TestHandlerInterceptor_WrapStreamingHandler_dependencyFailureIsIgnoredAndAdvised(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	a := startRelay(t, reg, c+callProcedure)

	w := wires[0]
	cl := connect.NewClient[msg, msg](w.httpClient(t), a+relayListProcedure, w.options()...)
	stream, err := cl.CallServerStream(t.Context(), connect.NewRequest(wrapperspb.String("code:14")))
	require.NoError(t, err)
	for stream.Receive() {
	}
	err = stream.Err()
	_ = stream.Close()
	assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
	assert.True(t, connectbreaker.ShedByServer(err), "the answer carries the advice")
	assert.Equal(t, [3]int64{0, 0, 1}, reg.Outcomes(connectbreaker.DefaultKey(context.Background(), "", relayListProcedure)),
		"the server's breaker counts neither")
}

func TestHandlerInterceptor_WrapUnary_dependencyDropIsIgnoredAndAdvised(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	require.NoError(t, reg.Registry.Get(strings.TrimPrefix(c, "http://")+callProcedure).SetOverride(
		override.Spec{Mode: override.ShedAll, TTL: override.MaxTTL, Reason: "test"}))
	a := startRelay(t, reg, c+callProcedure)

	err := callRelay(t, a, "ok")
	assert.True(t, connectbreaker.ShedByServer(err))
	assert.Equal(t, [3]int64{0, 0, 1}, reg.Outcomes(relayKey))
}

func TestHandlerInterceptor_WrapUnary_ownFailureCounts(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	a := startRelay(t, reg, c+callProcedure)

	err := callRelay(t, a, "own")
	assert.Equal(t, connect.CodeInternal, connect.CodeOf(err))
	assert.False(t, connectbreaker.ShedByServer(err))
	assert.Equal(t, [3]int64{0, 1, 0}, reg.Outcomes(relayKey))
}

func TestHandlerInterceptor_WrapUnary_panicAfterDependencyFailureCounts(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	a := startRelay(t, reg, c+callProcedure)

	err := callRelay(t, a, "code:14,panic")
	require.Error(t, err, "net/http aborts the answer")
	reg.WaitReported(t)
	assert.Equal(t, [3]int64{0, 1, 0}, reg.Outcomes(relayKey), "a panic is the server's own")
}

// A chain client → A → B → C with C down: only B's breaker for C sheds.
func TestHandlerInterceptor_WrapUnary_chainShedsNearestTheFailure(t *testing.T) {
	regs := map[string]*countingRegistry{"client": newRegistry(), "A": newRegistry(), "B": newRegistry()}
	_, c := startServer(t)
	b := startRelay(t, regs["B"], c+callProcedure)
	a := startRelay(t, regs["A"], b+relayProcedure)
	client := connect.WithInterceptors(connectbreaker.MustNewClientInterceptor(connectbreaker.WithBreakers(regs["client"].Get)))

	const n = 300
	for range n {
		err := callRelay(t, a, "code:14", client)
		require.True(t, connectbreaker.ShedByServer(err), "every answer carries the advice: %v", err)
	}

	cKey := strings.TrimPrefix(c, "http://") + callProcedure
	for name, reg := range regs {
		reg.Registry.Range(func(key string, br breaker.Breaker) bool {
			st := br.Stats()
			if name == "B" && key == cKey {
				assert.Greater(t, st.DropProbability, 0.9, "B's breaker for C")
				assert.Greater(t, st.TotalDrops, int64(n*8/10), "most calls to C are dropped")
				return true
			}
			assert.Zero(t, st.DropProbability, "%s's breaker %s", name, key)
			assert.Zero(t, st.TotalFailures, "%s's breaker %s", name, key)
			return true
		})
	}
}

// A dependency that hangs, or answers late, is counted by the client
// breaker of the call made to it, once: the call that waits on it is not
// out for its procedure's breaker meanwhile, with the overload limit on
// or off, in a unary call and a server stream alike.
func TestHandlerInterceptor_slowDependencyIsCountedOnce(t *testing.T) {
	for _, procedure := range []string{relayProcedure, relayListProcedure} {
		for _, limit := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/limit=%v", procedure, limit), func(t *testing.T) {
				mock := clock.NewMock()
				slow := breaker.WithSlowCall(200 * time.Millisecond)
				route := breaker.MustNewRegistry(breaker.WithClock(mock), slow)
				deps := breaker.MustNewRegistry(breaker.WithClock(mock), slow)
				called, release := make(chan struct{}), make(chan struct{})
				depMux := http.NewServeMux()
				depMux.Handle(callProcedure, connect.NewUnaryHandler(callProcedure,
					func(_ context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
						close(called)
						<-release
						return connect.NewResponse(req.Msg), nil
					}))
				dep := serve(t, depMux)
				w := wires[0]
				next := connect.NewClient[msg, msg](w.httpClient(t), dep+callProcedure, w.options(connect.WithInterceptors(
					connectbreaker.MustNewClientInterceptor(connectbreaker.WithRegistry(deps))))...)
				hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(route),
					connectbreaker.WithOverloadLimit(limit), connectbreaker.WithOverloadClock(mock))
				mux := http.NewServeMux()
				mux.Handle(relayProcedure, connect.NewUnaryHandler(relayProcedure,
					func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
						resp, err := next.CallUnary(ctx, connect.NewRequest(req.Msg))
						if err != nil {
							return nil, err
						}
						return connect.NewResponse(resp.Msg), nil
					}, connect.WithInterceptors(hi)))
				mux.Handle(relayListProcedure, connect.NewServerStreamHandler(relayListProcedure,
					func(ctx context.Context, req *connect.Request[msg], stream *connect.ServerStream[msg]) error {
						if _, err := next.CallUnary(ctx, connect.NewRequest(req.Msg)); err != nil {
							return err
						}
						return stream.Send(wrapperspb.String("ok"))
					}, connect.WithInterceptors(hi)))
				base := serve(t, mux)

				answered := make(chan error, 1)
				go func() {
					if procedure == relayProcedure {
						answered <- callRelay(t, base, "ok")
						return
					}
					c := connect.NewClient[msg, msg](w.httpClient(t), base+relayListProcedure, w.options()...)
					stream, err := c.CallServerStream(context.Background(), connect.NewRequest(wrapperspb.String("ok")))
					if err == nil {
						for stream.Receive() {
						}
						err = stream.Err()
					}
					answered <- err
				}()
				await(t, called, "the dependency's call")
				mock.Add(time.Second) // the dependency's call is out for a second
				rb := route.Get(connectbreaker.DefaultKey(context.Background(), "", procedure))
				db := deps.Get(connectbreaker.DefaultKey(context.Background(), strings.TrimPrefix(dep, "http://"), callProcedure))
				assert.Equal(t, int64(1), db.Stats().TotalFailures, "the dependency's breaker counts it out, overdue")
				assert.Zero(t, rb.Stats().TotalFailures, "the procedure's breaker does not: its call waits on the dependency")
				close(release)
				require.NoError(t, <-answered)
				st := rb.Stats()
				assert.Zero(t, st.TotalFailures, "the call was not slow: its dependency was")
				assert.Equal(t, int64(1), st.TotalSuccesses)
				assert.Equal(t, int64(1), db.Stats().TotalFailures, "counted once, overdue")
			})
		}
	}
}
