package grpcbreaker_test

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/override"
)

// bound is how long a test waits for what should happen at once: a bound
// on a bug, not a time the tests depend on.
const bound = 10 * time.Second

// spinUntil yields until cond holds, and fails the test if it does not
// within bound.
func spinUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("still waiting for " + what)
		}
		runtime.Gosched()
	}
}

// receive returns what ch gives, and fails the test if it gives nothing
// within bound.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound): // a bound on a bug
		t.Fatal("still waiting for " + what)
		panic("unreachable")
	}
}

// funcService is test.Echo with a Call served by a function of the
// request's value.
type funcService func(ctx context.Context, v string) (string, error)

var funcDesc = grpc.ServiceDesc{
	ServiceName: "test.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: func(srv any, ctx context.Context, dec func(any) error,
		interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := func(ctx context.Context, req any) (any, error) {
			out, err := srv.(funcService)(ctx, req.(*wrapperspb.StringValue).GetValue())
			if err != nil {
				return nil, err
			}
			return wrapperspb.String(out), nil
		}
		if interceptor == nil {
			return h(ctx, in)
		}
		return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: callMethod}, h)
	}}},
}

// startFunc runs, as startServer does, a server of test.Echo whose Call
// is f, and returns its address.
func startFunc(t *testing.T, f funcService, opts ...grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&funcDesc, f)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// TestUnaryServerInterceptor_overloadLimit_onByDefault checks that server
// interceptors made with no WithOverloadLimit option have the overload
// limit, whose figures are in the breaker's Stats once a call has been
// served, and that WithOverloadLimit(false) leaves it out.
func TestUnaryServerInterceptor_overloadLimit_onByDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []grpcbreaker.ServerOption
		on   bool
	}{
		{"default", nil, true},
		{"WithOverloadLimit(false)", []grpcbreaker.ServerOption{grpcbreaker.WithOverloadLimit(false)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := breaker.MustNewRegistry()
			si, err := grpcbreaker.NewServerInterceptors(append([]grpcbreaker.ServerOption{grpcbreaker.WithRegistry(reg)},
				tc.opts...)...)
			require.NoError(t, err)
			_, addr := startServer(t, grpc.UnaryInterceptor(si.Unary()))
			got, err := call(context.Background(), dial(t, addr), "v")
			require.NoError(t, err)
			assert.Equal(t, "v", got)
			st := reg.Get(serverKey(callMethod)).Stats()
			assert.Equal(t, int64(1), st.Successes)
			if !tc.on {
				assert.Nil(t, st.Overload, "no limit, no figures")
				return
			}
			require.NotNil(t, st.Overload, "the limit is on")
			assert.Equal(t, 0, st.Overload.InFlight, "the call has given its room back")
			assert.Equal(t, 0, st.Overload.Queued)
		})
	}
}

// TestUnaryServerInterceptor_overloadLimit_rejectsLowestFirstAndClientsCountIt
// runs server interceptors on loopback whose overload limit, forced to
// one call in the handler and overloaded, holds one SHEDDABLE call in the
// handler and queues one: a third SHEDDABLE call is rejected at once,
// before the handler runs, with Unavailable, an OVERLOADED ErrorInfo and
// the pushback trailer; the client interceptors count that as a failure,
// unlike a shed answer; the limit's figures show the rejection at
// SHEDDABLE and the server's breaker records nothing of it; and the
// queued call is served once the first is done.
func TestUnaryServerInterceptor_overloadLimit_rejectsLowestFirstAndClientsCountIt(t *testing.T) {
	serverReg := breaker.MustNewRegistry()
	si, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(serverReg),
		grpcbreaker.WithCriticalityPolicy(grpcbreaker.TrustMetadata(criticality.CriticalPlus)),
		grpcbreaker.WithOverloadClock(clock.NewMock())) // no time passes: the limit never doubles on a stall
	require.NoError(t, err)
	grpcbreaker.ForceOverload(si, serverKey(callMethod), 1, true)
	es, addr := startServer(t, grpc.UnaryInterceptor(si.Unary()))
	plain := dial(t, addr)
	sheddable := metadata.AppendToOutgoingContext(context.Background(),
		grpcbreaker.CriticalityKey, criticality.Sheddable.String())
	overload := func() *breaker.OverloadStats {
		st := serverReg.Get(serverKey(callMethod)).Stats().Overload
		require.NotNil(t, st)
		return st
	}

	first := make(chan error, 1)
	go func() { _, err := call(sheddable, plain, "hold"); first <- err }()
	receive(t, es.arrived, "the first call in the handler")
	queued := make(chan error, 1)
	go func() { _, err := call(sheddable, plain, "hold"); queued <- err }()
	spinUntil(t, "the second call in the queue", func() bool { return overload().Queued == 1 })

	clientReg := newRegistry()
	ci, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithBreakers(clientReg.Get))
	require.NoError(t, err)
	guarded := dial(t, addr, grpc.WithUnaryInterceptor(ci.Unary()))
	var trailer metadata.MD
	out := new(wrapperspb.StringValue)
	err = guarded.Invoke(criticality.With(context.Background(), criticality.Sheddable), callMethod,
		wrapperspb.String("hold"), out, grpc.Trailer(&trailer))
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.True(t, grpcbreaker.Overloaded(err), "the rejection says the server is overloaded: %v", err)
	assert.False(t, grpcbreaker.ShedByServer(err), "and is no shed answer")
	assert.False(t, grpcbreaker.RetryRefused(err))
	assert.Equal(t, []string{"1000"}, trailer.Get(grpcbreaker.PushbackTrailer))
	assert.Equal(t, int64(1), es.received.Load(), "the rejected call never reached the handler")
	clientKey := grpcbreaker.DefaultKey(context.Background(), addr, callMethod)
	cst := clientReg.Get(clientKey).Stats()
	assert.Equal(t, int64(1), cst.Failures, "the client's breaker counts the rejection, to throttle what it sends")
	assert.Equal(t, int64(1), clientReg.CountsFor(clientKey).Overloads.Load(),
		"as an overload rejection (srebreaker.RejectOverloaded)")
	assert.Equal(t, int64(0), cst.Successes)

	st := serverReg.Get(serverKey(callMethod)).Stats()
	require.NotNil(t, st.Overload)
	assert.Equal(t, [4]int64{0, 0, 0, 1}, st.Overload.Rejected, "rejected at SHEDDABLE")
	assert.Equal(t, 1, st.Overload.InFlight)
	assert.Equal(t, 1, st.Overload.Queued)
	assert.True(t, st.Overload.Overloaded)
	assert.Equal(t, int64(0), st.Failures+st.Successes, "a rejection is not recorded on the server's breaker")

	es.release <- struct{}{} // the first call goes on; the queued one, once in, finds the second token
	es.release <- struct{}{}
	assert.NoError(t, receive(t, first, "the first call's answer"))
	assert.NoError(t, receive(t, queued, "the queued call's answer"), "the queued call is served once the first is done")
	assert.Equal(t, int64(2), es.received.Load(), "the handler ran for the first and the queued call alone")
	st = serverReg.Get(serverKey(callMethod)).Stats()
	assert.Equal(t, int64(2), st.Successes)
	assert.Equal(t, 0, st.Overload.InFlight)
	assert.Equal(t, 0, st.Overload.Queued)
}

// TestUnaryServerInterceptor_overloadLimit_freesTheRoomOfAGuardedCall
// runs, on loopback, server interceptors whose overload limit, forced to
// one call in the handler on a clock that does not move, is in front of
// a handler that calls a dependency (a second server) through the client
// interceptors with its call's context: while the first call waits on a
// dependency that hangs, a second still reaches the handler, and none
// waits in the queue, since the client's breaker, not the server's limit,
// is to judge the dependency. Both succeed once the dependency answers.
func TestUnaryServerInterceptor_overloadLimit_freesTheRoomOfAGuardedCall(t *testing.T) {
	dep, depAddr := startServer(t)
	ci, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(breaker.MustNewRegistry()))
	require.NoError(t, err)
	depCC := dial(t, depAddr, grpc.WithUnaryInterceptor(ci.Unary()))

	entered := make(chan struct{}, 2)
	serverReg := breaker.MustNewRegistry()
	si, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(serverReg),
		grpcbreaker.WithOverloadClock(clock.NewMock())) // no time passes: the limit never doubles on a stall
	require.NoError(t, err)
	grpcbreaker.ForceOverload(si, serverKey(callMethod), 1, false)
	addr := startFunc(t, func(ctx context.Context, v string) (string, error) {
		entered <- struct{}{}
		return call(ctx, depCC, "hold") // through the client interceptors, with the served call's context
	}, grpc.UnaryInterceptor(si.Unary()))
	var releasing sync.Once
	release := func() {
		releasing.Do(func() {
			dep.release <- struct{}{}
			dep.release <- struct{}{}
		})
	}
	t.Cleanup(release) // before the servers stop, should the test end early

	cc := dial(t, addr)
	done := make(chan error, 2)
	get := func() {
		_, err := call(context.Background(), cc, "v")
		done <- err
	}
	go get()
	receive(t, entered, "the first call in the handler")
	receive(t, dep.arrived, "the first call's call to its dependency")
	go get()
	select { // the limit of one lets the second in: the first holds no room
	case <-entered:
	case <-time.After(bound): // a bound on a bug
		t.Fatal("the second call waits for the first, which waits on its dependency")
	}
	st := serverReg.Get(serverKey(callMethod)).Stats().Overload
	require.NotNil(t, st)
	assert.Equal(t, 0, st.Queued)
	assert.Equal(t, 1.0, st.Limit, "the limit stays as forced")
	release()
	assert.NoError(t, receive(t, done, "an answer"))
	assert.NoError(t, receive(t, done, "the other answer"))
	assert.Equal(t, int64(2), dep.received.Load())
	st = serverReg.Get(serverKey(callMethod)).Stats().Overload
	assert.Equal(t, 0, st.InFlight, "both calls have given their room back")
	assert.Equal(t, 0, st.Queued)
}

// TestUnaryServerInterceptor_overloadLimit_probeTakesItsRoom: a call the
// breaker drops but the interceptor serves all the same as a probe (its
// dependency looks down) waits for its room in the overload limit like
// any call.
func TestUnaryServerInterceptor_overloadLimit_probeTakesItsRoom(t *testing.T) {
	reg := breaker.MustNewRegistry()
	si, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(reg),
		grpcbreaker.WithOverloadClock(clock.NewMock())) // no time passes: the limit never doubles on a stall
	require.NoError(t, err)
	held, hold := make(chan struct{}, 1), make(chan struct{})
	var probes atomic.Int32
	addr := startFunc(t, func(ctx context.Context, v string) (string, error) {
		switch v {
		case "fail":
			return "", status.Error(codes.Internal, "the dependency is down")
		case "hold":
			held <- struct{}{}
			<-hold
		default:
			probes.Add(1)
		}
		return v, nil
	}, grpc.UnaryInterceptor(si.Unary()))
	var releasing sync.Once
	release := func() { releasing.Do(func() { close(hold) }) }
	t.Cleanup(release) // before the server stops
	conn := dial(t, addr)
	for range 3 { // three failures in a row: the dependency looks down
		_, err := call(context.Background(), conn, "fail")
		require.Equal(t, codes.Internal, status.Code(err))
	}
	grpcbreaker.ForceOverload(si, serverKey(callMethod), 1, false)
	holding := make(chan error, 1)
	go func() { _, err := call(context.Background(), conn, "hold"); holding <- err }()
	receive(t, held, "the call taking the only room")
	b := reg.Get(serverKey(callMethod))
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Hour}))
	for range 39 {
		_, err := call(context.Background(), conn, "probe")
		require.Equal(t, codes.Unavailable, status.Code(err), "dropped")
	}
	probe := make(chan error, 1)
	go func() { _, err := call(context.Background(), conn, "probe"); probe <- err }() // the 40th drop in a row
	spinUntil(t, "the probe in the queue", func() bool {
		select {
		case err := <-probe:
			t.Fatalf("the probe was answered (%v) while the only room was taken", err)
		default:
		}
		return b.Stats().Overload.Queued == 1
	})
	assert.Zero(t, probes.Load(), "the probe waits")
	release()
	assert.NoError(t, receive(t, holding, "the answer of the call taking the room"))
	assert.NoError(t, receive(t, probe, "the probe's answer"), "served once the room is free")
	assert.Equal(t, int32(1), probes.Load())
}

// TestUnaryServerInterceptor_overloadLimit_aWaitIsNoHang: a call that
// waits for room in the overload limit takes its promise of the method's
// breaker once let in, so that its wait, the server's own load, does not
// count as slowness or a hang of what it serves. The breaker counts a
// call slower than 200 ms as a failure; the handler holds the only room
// for 500 ms while a second call waits for it, then answers that one at
// once: the first is a failure, the second a success.
func TestUnaryServerInterceptor_overloadLimit_aWaitIsNoHang(t *testing.T) {
	mock := clock.NewMock()
	reg := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithSlowCall(200*time.Millisecond))
	si, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(reg), grpcbreaker.WithOverloadClock(mock))
	require.NoError(t, err)
	grpcbreaker.ForceOverload(si, serverKey(callMethod), 1, false)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	addr := startFunc(t, func(_ context.Context, v string) (string, error) {
		if v == "hold" {
			entered <- struct{}{}
			<-release
		}
		return v, nil
	}, grpc.UnaryInterceptor(si.Unary()))
	cc := dial(t, addr)
	b := reg.Get(serverKey(callMethod))

	held := make(chan error, 1)
	go func() { _, err := call(context.Background(), cc, "hold"); held <- err }()
	receive(t, entered, "the first call in the handler")
	waiting := make(chan error, 1)
	go func() { _, err := call(context.Background(), cc, "quick"); waiting <- err }()
	spinUntil(t, "the second call in the queue", func() bool { return b.Stats().Overload.Queued == 1 })
	mock.Add(500 * time.Millisecond)
	close(release)
	require.NoError(t, receive(t, held, "the first call's answer"))
	require.NoError(t, receive(t, waiting, "the second call's answer"))
	st := b.Stats()
	assert.Equal(t, int64(1), st.TotalFailures, "the handler that held the room for 500 ms was slow")
	assert.Equal(t, int64(1), st.TotalSuccesses, "the call that waited for it was answered at once")
}
