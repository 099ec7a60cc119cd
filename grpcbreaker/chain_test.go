package grpcbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/override"
)

// relayMethod is the one method of test.Relay: its handler calls
// test.Echo/Call (or test.Relay/Call) on the next server with the value it
// got, and fails with a status of its own, Unavailable without details,
// when that call fails. Its value, a comma-separated list, may also say:
//
//	"own"    fail with Internal without calling anything
//	"panic"  panic after the call
const relayMethod = "/test.Relay/Call"

// relay is the test.Relay service: next is the connection to the next
// server, method the method it calls there.
type relay struct {
	next   *grpc.ClientConn
	method string
}

var relayDesc = grpc.ServiceDesc{
	ServiceName: "test.Relay",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Call", Handler: relayHandler}},
	Streams:     []grpc.StreamDesc{{StreamName: "List", Handler: relayListHandler, ServerStreams: true}},
}

// relayListMethod is test.Relay's server stream: it calls the next server
// as Call does, with the value it got, and fails as Call does.
const relayListMethod = "/test.Relay/List"

func relayListHandler(srv any, stream grpc.ServerStream) error {
	r := srv.(*relay)
	in := new(wrapperspb.StringValue)
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	if err := r.next.Invoke(stream.Context(), r.method, in, new(wrapperspb.StringValue)); err != nil {
		return status.Error(codes.Unavailable, "dependency failed")
	}
	return stream.SendMsg(wrapperspb.String("ok"))
}

func relayHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.StringValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	h := func(ctx context.Context, req any) (any, error) {
		r := srv.(*relay)
		v := req.(*wrapperspb.StringValue).GetValue()
		if has(v, "own") {
			return nil, status.Error(codes.Internal, "the relay's own failure")
		}
		out := new(wrapperspb.StringValue)
		err := r.next.Invoke(ctx, r.method, wrapperspb.String(v), out)
		if has(v, "panic") {
			panic("relay bug")
		}
		if err != nil {
			return nil, status.Error(codes.Unavailable, "dependency failed")
		}
		return out, nil
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: relayMethod}, h)
}

// startRelay runs a test.Relay, guarded by server interceptors of reg,
// that calls method at next through client interceptors of reg, and
// returns its address.
func startRelay(t *testing.T, reg *countingRegistry, next, method string) string {
	t.Helper()
	cc := dial(t, next, grpc.WithUnaryInterceptor(
		grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithBreakers(reg.Get))))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.UnaryInterceptor(grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithBreakers(reg.Get))),
		grpc.StreamInterceptor(grpcbreaker.StreamServerInterceptor(grpcbreaker.WithBreakers(reg.Get))))
	srv.RegisterService(&relayDesc, &relay{next: cc, method: method})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

func callRelay(ctx context.Context, cc *grpc.ClientConn, v string) error {
	return cc.Invoke(ctx, relayMethod, wrapperspb.String(v), new(wrapperspb.StringValue))
}

var relayKey = serverKey(relayMethod)

func TestServerInterceptors_Unary_dependencyFailureIsIgnoredAndAdvised(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	cc := dial(t, startRelay(t, reg, c, callMethod))

	err := callRelay(t.Context(), cc, "code:14")
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.True(t, grpcbreaker.ShedByServer(err), "the answer carries the advice")
	assert.Equal(t, [3]int64{0, 0, 1}, reg.Outcomes(relayKey), "the server's breaker counts neither")
	assert.Equal(t, [3]int64{0, 1, 0}, reg.Outcomes(c+callMethod), "the dependency's breaker counts the failure")
}

func TestServerInterceptors_Stream_dependencyFailureIsIgnoredAndAdvised(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	cc := dial(t, startRelay(t, reg, c, callMethod))

	stream, err := cc.NewStream(t.Context(), &grpc.StreamDesc{ServerStreams: true}, relayListMethod)
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(wrapperspb.String("code:14")))
	require.NoError(t, stream.CloseSend())
	err = stream.RecvMsg(new(wrapperspb.StringValue))
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.True(t, grpcbreaker.ShedByServer(err), "the answer carries the advice")
	assert.Equal(t, [3]int64{0, 0, 1}, reg.Outcomes(serverKey(relayListMethod)), "the server's breaker counts neither")
}

func TestServerInterceptors_Unary_dependencyDropIsIgnoredAndAdvised(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	require.NoError(t, reg.Registry.Get(c+callMethod).SetOverride(override.Spec{Mode: override.ShedAll, TTL: override.MaxTTL, Reason: "test"}))
	cc := dial(t, startRelay(t, reg, c, callMethod))

	err := callRelay(t.Context(), cc, "ok")
	assert.True(t, grpcbreaker.ShedByServer(err))
	assert.Equal(t, [3]int64{0, 0, 1}, reg.Outcomes(relayKey))
}

func TestServerInterceptors_Unary_ownFailureCounts(t *testing.T) {
	reg := newRegistry()
	_, c := startServer(t)
	cc := dial(t, startRelay(t, reg, c, callMethod))

	err := callRelay(t.Context(), cc, "own")
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.False(t, grpcbreaker.ShedByServer(err))
	assert.Equal(t, [3]int64{0, 1, 0}, reg.Outcomes(relayKey))
}

func TestServerInterceptors_Unary_panicAfterDependencyFailureCounts(t *testing.T) {
	reg := newRegistry()
	unary := grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithBreakers(reg.Get))
	dep := reg.Get("dependency")
	handler := func(ctx context.Context, _ any) (any, error) {
		_ = dep.DoCtx(ctx, func() error { return errors.New("dependency down") })
		panic("handler bug")
	}

	assert.PanicsWithValue(t, "handler bug", func() {
		_, _ = unary(t.Context(), nil, &grpc.UnaryServerInfo{FullMethod: relayMethod}, handler)
	})
	assert.Equal(t, [3]int64{0, 1, 0}, reg.Outcomes(relayKey), "a panic is the server's own")
}

// A chain client → A → B → C with C down: only B's breaker for C sheds.
func TestServerInterceptors_Unary_chainShedsNearestTheFailure(t *testing.T) {
	regs := map[string]*countingRegistry{"client": newRegistry(), "A": newRegistry(), "B": newRegistry()}
	_, c := startServer(t)
	b := startRelay(t, regs["B"], c, callMethod)
	a := startRelay(t, regs["A"], b, relayMethod)
	cc := dial(t, a, grpc.WithUnaryInterceptor(
		grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithBreakers(regs["client"].Get))))

	const n = 300
	for range n {
		err := callRelay(t.Context(), cc, "code:14")
		require.True(t, grpcbreaker.ShedByServer(err), "every answer carries the advice: %v", err)
	}

	for name, reg := range regs {
		reg.Registry.Range(func(key string, br breaker.Breaker) bool {
			st := br.Stats()
			if name == "B" && key == c+callMethod {
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
// out for its method's breaker meanwhile, with the overload limit on or
// off, in a unary call and a server stream alike.
func TestServerInterceptors_slowDependencyIsCountedOnce(t *testing.T) {
	for _, method := range []string{relayMethod, relayListMethod} {
		for _, limit := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/limit=%v", method, limit), func(t *testing.T) {
				mock := clock.NewMock()
				slow := breaker.WithSlowCall(200 * time.Millisecond)
				route := breaker.MustNewRegistry(breaker.WithClock(mock), slow)
				deps := breaker.MustNewRegistry(breaker.WithClock(mock), slow)
				called, release := make(chan struct{}), make(chan struct{})
				dep := startFunc(t, func(_ context.Context, v string) (string, error) {
					close(called)
					<-release
					return v, nil
				})
				next := dial(t, dep, grpc.WithUnaryInterceptor(
					grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(deps))))
				si, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(route),
					grpcbreaker.WithOverloadLimit(limit), grpcbreaker.WithOverloadClock(mock))
				require.NoError(t, err)
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				srv := grpc.NewServer(grpc.UnaryInterceptor(si.Unary()), grpc.StreamInterceptor(si.Stream()))
				srv.RegisterService(&relayDesc, &relay{next: next, method: callMethod})
				go func() { _ = srv.Serve(ln) }()
				t.Cleanup(srv.Stop)
				cc := dial(t, ln.Addr().String())

				answered := make(chan error, 1)
				go func() {
					if method == relayMethod {
						answered <- callRelay(context.Background(), cc, "ok")
						return
					}
					stream, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, relayListMethod)
					if err == nil {
						err = stream.SendMsg(wrapperspb.String("ok"))
					}
					if err == nil {
						err = stream.RecvMsg(new(wrapperspb.StringValue))
					}
					answered <- err
				}()
				receive(t, called, "the dependency's call")
				mock.Add(time.Second) // the dependency's call is out for a second
				rb, db := route.Get(serverKey(method)), deps.Get(dep+callMethod)
				assert.Equal(t, int64(1), db.Stats().TotalFailures, "the dependency's breaker counts it out, overdue")
				assert.Zero(t, rb.Stats().TotalFailures, "the method's breaker does not: its call waits on the dependency")
				close(release)
				require.NoError(t, receive(t, answered, "the call's answer"))
				st := rb.Stats()
				assert.Zero(t, st.TotalFailures, "the call was not slow: its dependency was")
				assert.Equal(t, int64(1), st.TotalSuccesses)
				assert.Equal(t, int64(1), db.Stats().TotalFailures, "counted once, overdue")
			})
		}
	}
}
