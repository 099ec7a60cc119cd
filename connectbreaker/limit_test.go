package connectbreaker_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/override"
)

// callKey is the key of the test service's Call on a HandlerInterceptor
// with the default KeyFunc.
var callKey = connectbreaker.DefaultKey(context.Background(), "", callProcedure)

// limitBound bounds a wait that only a bug makes long.
const limitBound = 10 * time.Second

// TestHandlerInterceptor_overloadLimit_onByDefault checks that a
// HandlerInterceptor built with no WithOverloadLimit option has its
// overload limit on, so that its breaker's Stats carry the limit's
// figures once it has served a call, and that WithOverloadLimit(false)
// turns it off: no figures.
func TestHandlerInterceptor_overloadLimit_onByDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []connectbreaker.HandlerOption
		on   bool
	}{
		{name: "default", on: true},
		{name: "off", opts: []connectbreaker.HandlerOption{connectbreaker.WithOverloadLimit(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := breaker.MustNewRegistry()
			hi := connectbreaker.MustNewHandlerInterceptor(append([]connectbreaker.HandlerOption{
				connectbreaker.WithRegistry(reg)}, tc.opts...)...)
			es, base := startServer(t, connect.WithInterceptors(hi))
			got, err := newClients(t, wires[0], base).unary(t.Context(), "ok")
			require.NoError(t, err)
			assert.Equal(t, "ok", got)
			assert.Equal(t, int64(1), es.received.Load())
			st := reg.Get(callKey).Stats()
			if tc.on {
				require.NotNil(t, st.Overload, "the limit is on: its figures are in the breaker's Stats")
				assert.Zero(t, st.Overload.InFlight, "the call served gave its room back")
				assert.Zero(t, st.Overload.Queued)
			} else {
				assert.Nil(t, st.Overload, "no limit, no figures")
			}
		})
	}
}

// heldServer is a service of one procedure, Call, whose handler counts
// the calls that reach it, tells entered of each, and holds it until
// release is closed (or the call's context ends).
type heldServer struct {
	base    string
	ran     atomic.Int32
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// startHeld runs a heldServer behind hi on 127.0.0.1 until the test ends;
// its handlers are released before the server closes.
func startHeld(t *testing.T, hi *connectbreaker.HandlerInterceptor) *heldServer {
	t.Helper()
	s := &heldServer{entered: make(chan struct{}, 8), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle(callProcedure, connect.NewUnaryHandler(callProcedure,
		func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
			s.ran.Add(1)
			s.entered <- struct{}{}
			select {
			case <-s.release:
			case <-ctx.Done():
				return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
			}
			return connect.NewResponse(req.Msg), nil
		}, connect.WithInterceptors(hi)))
	s.base = serve(t, mux)
	t.Cleanup(s.releaseAll) // runs before serve's cleanup closes the server
	return s
}

// releaseAll lets every call held in the handler, and any to come, go on.
func (s *heldServer) releaseAll() { s.once.Do(func() { close(s.release) }) }

// callAt calls c with a value, sending the CriticalityHeader for level
// itself, as a client that is not a ClientInterceptor does.
func callAt(ctx context.Context, c *connect.Client[msg, msg], level criticality.Level) error {
	req := connect.NewRequest(wrapperspb.String("held"))
	req.Header().Set(connectbreaker.CriticalityHeader, level.String())
	_, err := c.CallUnary(ctx, req)
	return err
}

// await waits for a value on ch, and fails the test with what when none
// comes within limitBound.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(limitBound): // a bound on a bug
		t.Fatal(what)
	}
}

// waitQueued waits until the limit of key in reg has a call in its queue.
func waitQueued(t *testing.T, reg *breaker.Registry, key string) {
	t.Helper()
	deadline := time.Now().Add(limitBound) // a bound on a bug
	for {
		st := reg.Get(key).Stats()
		require.NotNil(t, st.Overload)
		if st.Overload.Queued > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the second call never reached the queue")
		}
		runtime.Gosched() // the second call is on its way to the queue
	}
}

// TestHandlerInterceptor_overloadLimit_rejectsLowestFirstAndClientsCountIt
// runs, on loopback over each wire, a HandlerInterceptor whose overload
// limit holds one call in the handler and, overloaded, queues one
// SHEDDABLE call: a third SHEDDABLE call is rejected at once, before the
// handler runs, with unavailable and the overload detail (Overloaded, not
// ShedByServer), and the ClientInterceptor it went through counts that as
// a failure, unlike a shed answer. The limit's figures count the
// rejection at SHEDDABLE, the server's breaker records nothing of it, and
// the queued call is served once the first is released. The limit reads
// a mock clock, so that no wait expires and no stall doubles the limit
// however slow the test runs.
func TestHandlerInterceptor_overloadLimit_rejectsLowestFirstAndClientsCountIt(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			serverReg := breaker.MustNewRegistry()
			hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(serverReg),
				connectbreaker.WithCriticalityPolicy(connectbreaker.TrustHeader(criticality.CriticalPlus)),
				connectbreaker.WithOverloadClock(clock.NewMock()))
			connectbreaker.ForceOverload(hi, callKey, 1, true)
			s := startHeld(t, hi)
			plain := connect.NewClient[msg, msg](w.httpClient(t), s.base+callProcedure, w.options()...)

			first := make(chan error, 1)
			go func() { first <- callAt(t.Context(), plain, criticality.Sheddable) }()
			await(t, s.entered, "the first call never reached the handler")
			queued := make(chan error, 1)
			go func() { queued <- callAt(t.Context(), plain, criticality.Sheddable) }()
			waitQueued(t, serverReg, callKey)

			clientReg := newRegistry()
			guarded := connect.NewClient[msg, msg](w.httpClient(t), s.base+callProcedure, w.options(
				connect.WithInterceptors(connectbreaker.MustNewClientInterceptor(connectbreaker.WithBreakers(clientReg.Get))))...)
			_, err := guarded.CallUnary(criticality.With(t.Context(), criticality.Sheddable),
				connect.NewRequest(wrapperspb.String("held")))
			require.Error(t, err)
			assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
			assert.True(t, connectbreaker.Overloaded(err), "the rejection says the server is overloaded: %v", err)
			assert.False(t, connectbreaker.ShedByServer(err), "and is no shed answer")
			var ce *connect.Error
			if assert.True(t, errors.As(err, &ce)) {
				assert.Equal(t, connectbreaker.RetryLater, ce.Meta().Get(connectbreaker.RetryHeader))
				assert.Equal(t, "1", ce.Meta().Get(connectbreaker.OverloadHeader))
			}
			clientKey := strings.TrimPrefix(s.base, "http://") + callProcedure
			cst := clientReg.Get(clientKey).Stats()
			assert.Equal(t, int64(1), cst.Failures, "the client's breaker counts the rejection, to throttle what it sends")
			assert.Equal(t, int64(1), clientReg.CountsFor(clientKey).Overloads.Load(),
				"as an overload rejection (srebreaker.RejectOverloaded)")
			assert.Equal(t, int64(0), cst.Successes)

			st := serverReg.Get(callKey).Stats()
			require.NotNil(t, st.Overload)
			assert.Equal(t, [4]int64{0, 0, 0, 1}, st.Overload.Rejected, "rejected at SHEDDABLE")
			assert.Equal(t, 1, st.Overload.InFlight)
			assert.Equal(t, 1, st.Overload.Queued, "the queued call still waits")
			assert.True(t, st.Overload.Overloaded)
			assert.Equal(t, int64(0), st.Failures+st.Successes, "a rejection is not recorded on the server's breaker")
			assert.Equal(t, int32(1), s.ran.Load(), "the rejected call never reached the handler")

			s.releaseAll()
			assert.NoError(t, <-first)
			assert.NoError(t, <-queued, "the queued call is served once the first is done")
			assert.Equal(t, int32(2), s.ran.Load(), "the handler ran for the first and the queued call only")
		})
	}
}

// TestHandlerInterceptor_overloadLimit_freesTheRoomOfAGuardedCall runs,
// on loopback over each wire, a HandlerInterceptor whose overload limit
// holds one call in front of a handler that makes a unary call, with the
// served call's context, through a ClientInterceptor to a second server:
// while the first call waits on that dependency, which hangs, a second
// call still reaches the handler, with nothing queued, since a call out
// on a guarded call holds no room; the ClientInterceptor's breaker, not
// the server's limit, is to judge the dependency. The limit reads a mock
// clock, so that the stall rule, which doubles the limit once calls have
// waited a second, never lets the second call in by itself.
func TestHandlerInterceptor_overloadLimit_freesTheRoomOfAGuardedCall(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			release := make(chan struct{})
			var releasing sync.Once
			releaseAll := func() { releasing.Do(func() { close(release) }) }
			depArrived := make(chan struct{}, 2)
			depMux := http.NewServeMux()
			depMux.Handle(callProcedure, connect.NewUnaryHandler(callProcedure,
				func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
					depArrived <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
						return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
					}
					return connect.NewResponse(req.Msg), nil
				}))
			dep := serve(t, depMux)
			depClient := connect.NewClient[msg, msg](w.httpClient(t), dep+callProcedure, w.options(
				connect.WithInterceptors(connectbreaker.MustNewClientInterceptor(
					connectbreaker.WithRegistry(breaker.MustNewRegistry()))))...)

			entered := make(chan struct{}, 2)
			serverReg := breaker.MustNewRegistry()
			hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(serverReg),
				connectbreaker.WithOverloadClock(clock.NewMock())) // no time passes: the limit never doubles on a stall
			connectbreaker.ForceOverload(hi, callKey, 1, false)
			mux := http.NewServeMux()
			mux.Handle(callProcedure, connect.NewUnaryHandler(callProcedure,
				func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
					entered <- struct{}{}
					resp, err := depClient.CallUnary(ctx, connect.NewRequest(req.Msg))
					if err != nil {
						return nil, connect.NewError(connect.CodeUnavailable, errors.New("dependency failed"))
					}
					return connect.NewResponse(resp.Msg), nil
				}, connect.WithInterceptors(hi)))
			base := serve(t, mux)
			t.Cleanup(releaseAll) // before the servers close

			client := connect.NewClient[msg, msg](w.httpClient(t), base+callProcedure, w.options()...)
			done := make(chan error, 2)
			call := func(v string) {
				resp, err := client.CallUnary(t.Context(), connect.NewRequest(wrapperspb.String(v)))
				if err == nil && resp.Msg.GetValue() != v {
					err = errors.New("answered " + resp.Msg.GetValue() + ", not " + v)
				}
				done <- err
			}
			go call("first")
			await(t, entered, "the first call never reached the handler")
			await(t, depArrived, "the first call never reached its dependency") // it is out on its guarded call
			go call("second")
			// The limit of one lets the second in: the first holds no room.
			await(t, entered, "the second call waits for the first, which waits on its dependency")
			st := serverReg.Get(callKey).Stats()
			require.NotNil(t, st.Overload)
			assert.Equal(t, 0, st.Overload.Queued)
			assert.Equal(t, float64(1), st.Overload.Limit, "the limit did not move: the room was the first call's")

			releaseAll()
			assert.NoError(t, <-done)
			assert.NoError(t, <-done)
		})
	}
}

// TestHandlerInterceptor_overloadLimit_probeTakesItsRoom: a call the
// breaker drops but the interceptor serves all the same as a probe (its
// dependency looks down) waits for its room in the overload limit like
// any call.
func TestHandlerInterceptor_overloadLimit_probeTakesItsRoom(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			reg := breaker.MustNewRegistry()
			hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(reg),
				connectbreaker.WithOverloadClock(clock.NewMock())) // no time passes: the limit never doubles on a stall
			held, hold := make(chan struct{}, 1), make(chan struct{})
			var probes atomic.Int32
			mux := http.NewServeMux()
			mux.Handle(callProcedure, connect.NewUnaryHandler(callProcedure,
				func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
					switch req.Msg.GetValue() {
					case "fail":
						return nil, connect.NewError(connect.CodeInternal, errors.New("the dependency is down"))
					case "hold":
						held <- struct{}{}
						<-hold
					default:
						probes.Add(1)
					}
					return connect.NewResponse(req.Msg), nil
				}, connect.WithInterceptors(hi)))
			base := serve(t, mux)
			var releasing sync.Once
			release := func() { releasing.Do(func() { close(hold) }) }
			t.Cleanup(release) // before the server closes
			client := connect.NewClient[msg, msg](w.httpClient(t), base+callProcedure, w.options()...)
			call := func(v string) error {
				_, err := client.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String(v)))
				return err
			}
			for range 3 { // three failures in a row: the dependency looks down
				require.Equal(t, connect.CodeInternal, connect.CodeOf(call("fail")))
			}
			connectbreaker.ForceOverload(hi, callKey, 1, false)
			holding := make(chan error, 1)
			go func() { holding <- call("hold") }()
			await(t, held, "the call taking the only room never reached the handler")
			b := reg.Get(callKey)
			require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Hour}))
			for range 39 {
				require.Equal(t, connect.CodeUnavailable, connect.CodeOf(call("probe")), "dropped")
			}
			probe := make(chan error, 1)
			go func() { probe <- call("probe") }() // the 40th drop in a row
			deadline := time.Now().Add(limitBound)
			for b.Stats().Overload.Queued == 0 {
				select {
				case err := <-probe:
					t.Fatalf("the probe was answered (%v) while the only room was taken", err)
				default:
				}
				require.True(t, time.Now().Before(deadline), "the probe never reached the queue")
				runtime.Gosched()
			}
			assert.Zero(t, probes.Load(), "the probe waits")
			release()
			assert.NoError(t, <-holding)
			assert.NoError(t, <-probe, "served once the room is free")
			assert.Equal(t, int32(1), probes.Load())
		})
	}
}

// TestHandlerInterceptor_overloadLimit_aWaitIsNoHang: a call that waits
// for room in the overload limit takes its promise of the procedure's
// breaker once let in, so that its wait, the server's own load, does not
// count as slowness or a hang of what it serves. The breaker counts a
// call slower than 200 ms as a failure; the handler holds the only room
// for 500 ms while a second call waits for it, then answers that one at
// once: the first is a failure, the second a success.
func TestHandlerInterceptor_overloadLimit_aWaitIsNoHang(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			mock := clock.NewMock()
			reg := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithSlowCall(200*time.Millisecond))
			hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(reg),
				connectbreaker.WithOverloadClock(mock))
			connectbreaker.ForceOverload(hi, callKey, 1, false)
			entered, release := make(chan struct{}, 1), make(chan struct{})
			mux := http.NewServeMux()
			mux.Handle(callProcedure, connect.NewUnaryHandler(callProcedure,
				func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
					if req.Msg.GetValue() == "hold" {
						entered <- struct{}{}
						<-release
					}
					return connect.NewResponse(req.Msg), nil
				}, connect.WithInterceptors(hi)))
			base := serve(t, mux)
			client := connect.NewClient[msg, msg](w.httpClient(t), base+callProcedure, w.options()...)
			call := func(v string, done chan<- error) {
				_, err := client.CallUnary(t.Context(), connect.NewRequest(wrapperspb.String(v)))
				done <- err
			}
			b := reg.Get(callKey)

			held, waiting := make(chan error, 1), make(chan error, 1)
			go call("hold", held)
			await(t, entered, "the first call never reached the handler")
			go call("quick", waiting)
			deadline := time.Now().Add(limitBound)
			for b.Stats().Overload.Queued == 0 {
				require.True(t, time.Now().Before(deadline), "the second call never reached the queue")
				runtime.Gosched()
			}
			mock.Add(500 * time.Millisecond)
			close(release)
			require.NoError(t, <-held)
			require.NoError(t, <-waiting)
			st := b.Stats()
			assert.Equal(t, int64(1), st.TotalFailures, "the handler that held the room for 500 ms was slow")
			assert.Equal(t, int64(1), st.TotalSuccesses, "the call that waited for it was answered at once")
		})
	}
}
