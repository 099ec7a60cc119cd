package connectbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/retry"
)

// server is the test service behind a HandlerInterceptor with a counting
// registry.
type server struct {
	*echoServer
	base string
	reg  *countingRegistry
}

func newServer(t *testing.T, opts ...connectbreaker.HandlerOption) *server {
	t.Helper()
	reg := newRegistry()
	hi, err := connectbreaker.NewHandlerInterceptor(append([]connectbreaker.HandlerOption{
		connectbreaker.WithBreakers(reg.Get)}, opts...)...)
	require.NoError(t, err)
	es, base := startServer(t, connect.WithInterceptors(hi))
	return &server{echoServer: es, base: base, reg: reg}
}

// outcomes waits for the outcome of one more call of procedure and
// returns the outcomes so far: the server records a call after its
// client may have its answer.
func (s *server) outcomes(t *testing.T, procedure string) [3]int64 {
	t.Helper()
	s.reg.WaitReported(t)
	return s.reg.Outcomes("server:" + procedure)
}

func TestHandlerInterceptor_classifiesCodes(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			for c := connect.Code(0); c <= connect.CodeUnauthenticated; c++ {
				s := newServer(t)
				cs := newClients(t, w, s.base)
				_, err := cs.unary(context.Background(), fmt.Sprintf("code:%d", c))
				if c != 0 {
					assert.Equal(t, c, connect.CodeOf(err))
				}
				assert.Equal(t, wantOf(c), s.outcomes(t, callProcedure), "unary, [successes failures neither] for %v", c)

				_, err = cs.listAll(context.Background(), fmt.Sprintf("n:2,code:%d", c))
				if c != 0 {
					assert.Equal(t, c, connect.CodeOf(err))
				}
				assert.Equal(t, wantOf(c), s.outcomes(t, listProcedure), "stream, [successes failures neither] for %v", c)
			}
		})
	}
}

func TestHandlerInterceptor_clientAndBidiStreams(t *testing.T) {
	for _, w := range h2cWires() {
		t.Run(w.name, func(t *testing.T) {
			s := newServer(t)
			cs := newClients(t, w, s.base)
			st := cs.collect.CallClientStream(context.Background())
			require.NoError(t, st.Send(wrapperspb.String("a")))
			_ = st.Send(wrapperspb.String("code:13"))
			_, err := st.CloseAndReceive()
			assert.Equal(t, connect.CodeInternal, connect.CodeOf(err))
			assert.Equal(t, failure, s.outcomes(t, collectProcedure))

			bs := cs.chat.CallBidiStream(context.Background())
			require.NoError(t, bs.Send(wrapperspb.String("a")))
			_, err = bs.Receive()
			require.NoError(t, err)
			require.NoError(t, bs.CloseRequest())
			_, _ = bs.Receive()
			require.NoError(t, bs.CloseResponse())
			assert.Equal(t, success, s.outcomes(t, chatProcedure))
		})
	}
}

// A call whose client went away counts as neither, whether its handler
// then answers the cancel (block) or a failure of its own made of it
// (late, then unavailable): no one gets its answer.
func TestHandlerInterceptor_clientGoneIsNeither(t *testing.T) {
	for _, v := range []string{"block", fmt.Sprintf("late,code:%d", connect.CodeUnavailable)} {
		for _, w := range wires {
			t.Run(v+"/"+w.name, func(t *testing.T) {
				s := newServer(t)
				cs := newClients(t, w, s.base)
				ctx, cancel := context.WithCancel(context.Background())
				go func() { <-s.arrived; cancel() }()
				_, err := cs.unary(ctx, v)
				assert.Equal(t, connect.CodeCanceled, connect.CodeOf(err))
				assert.Equal(t, neither, s.outcomes(t, callProcedure), "the client gave up: the server is not to blame")
			})
		}
	}
}

func TestHandlerInterceptor_panicIsFailure(t *testing.T) {
	reg := newRegistry()
	hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithBreakers(reg.Get))
	recovered := make(chan any, 1)
	_, base := startServer(t, connect.WithInterceptors(hi),
		connect.WithRecover(func(_ context.Context, _ connect.Spec, _ http.Header, v any) error {
			recovered <- v
			return connect.NewError(connect.CodeInternal, errors.New("recovered"))
		}))
	_, err := newClients(t, wires[0], base).unary(context.Background(), "panic")
	assert.Equal(t, connect.CodeInternal, connect.CodeOf(err))
	assert.Equal(t, "handler bug", <-recovered, "raised again, with its value")
	assert.Equal(t, failure, reg.Outcomes("server:"+callProcedure))
}

// shedding returns a registry whose breaker for the test service's Call
// sheds most calls: it has seen 200 failures and no success (the plain
// formula: it drops 195/201 of calls), on a clock that does not move.
func shedding(t *testing.T) *breaker.Registry {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)), breaker.WithPlainFormula())
	b := reg.Get(connectbreaker.DefaultKey(context.Background(), "", callProcedure))
	for i := 0; i < 200; {
		if p, err := b.Allow(); err == nil {
			p.Reject("down")
			i++
		}
	}
	return reg
}

// shedOnce calls until the server sheds a call, and returns its error.
func shedOnce(t *testing.T, cs clients, attempt string) error {
	t.Helper()
	for range 1000 {
		req := connect.NewRequest(wrapperspb.String("v"))
		if attempt != "" {
			req.Header().Set(connectbreaker.AttemptHeader, attempt)
		}
		_, err := cs.call.CallUnary(context.Background(), req)
		if connect.CodeOf(err) == connect.CodeUnavailable {
			return err
		}
	}
	t.Fatal("the server shed no call")
	return nil
}

// errorInfo returns the ErrorInfo detail of err, if it has one.
func errorInfo(err error) *errdetails.ErrorInfo {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return info
			}
		}
	}
	return nil
}

func TestHandlerInterceptor_shedAnswer(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(shedding(t)))
			_, base := startServer(t, connect.WithInterceptors(hi))
			cs := newClients(t, w, base)

			// First attempts: retry later, after 1 s.
			err := shedOnce(t, cs, "")
			var ce *connect.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "connectbreaker: call shed by the server's breaker: the server is overloaded, retry later",
				ce.Message(), "the breaker's reasons stay on the server")
			assert.True(t, connectbreaker.ShedByServer(err))
			assert.False(t, connectbreaker.RetryRefused(err))
			assert.Equal(t, connectbreaker.RetryLater, ce.Meta().Get(connectbreaker.RetryHeader))
			assert.Equal(t, "1000", ce.Meta().Get("Grpc-Retry-Pushback-Ms"))
			if info := errorInfo(err); assert.NotNil(t, info, "an ErrorInfo detail, for gRPC clients") {
				assert.Equal(t, connectbreaker.ErrorDomain, info.GetDomain())
				assert.Equal(t, "SHED", info.GetReason())
				assert.Equal(t, "later", info.GetMetadata()["retry"])
			}

			// Retries, most of what it sheds: don't retry.
			for range 8 {
				err = shedOnce(t, cs, "2")
			}
			assert.True(t, connectbreaker.RetryRefused(err))
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "-1", ce.Meta().Get("Grpc-Retry-Pushback-Ms"))
			assert.Equal(t, "no", errorInfo(err).GetMetadata()["retry"])
		})
	}
}

// TestClientInterceptor_readsShedAnswer: a ClientInterceptor in front of a
// shedding HandlerInterceptor records its sheds as neither, and hands
// package retry the server's advice.
func TestClientInterceptor_readsShedAnswer(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(shedding(t)))
			es, base := startServer(t, connect.WithInterceptors(hi))
			cl := newClientOf(t, w, es, base)
			err := shedOnce(t, cl.clients, "")
			d, again, ok := retry.PushbackOf(err)
			require.True(t, ok, "the server's pushback, for package retry: %v", err)
			assert.True(t, again)
			assert.Equal(t, time.Second, d)
			assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err), "the call's code")
			o := cl.outcomes(callProcedure)
			assert.Zero(t, o[1], "no failure: the server's breaker throttles it")
			assert.Positive(t, o[2], "the sheds are neither")

			for range 8 {
				err = shedOnce(t, cl.clients, "2")
			}
			_, again, ok = retry.PushbackOf(err)
			assert.True(t, ok)
			assert.False(t, again, "don't retry")
			assert.False(t, retry.Retryable(err))
		})
	}
}

func TestHandlerInterceptor_failureWhileSheddingCarriesAdvice(t *testing.T) {
	hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(shedding(t)))
	_, base := startServer(t, connect.WithInterceptors(hi))
	cs := newClients(t, wires[0], base)
	for range 1000 {
		_, err := cs.unary(context.Background(), "code:13")
		if connect.CodeOf(err) != connect.CodeInternal {
			continue // shed
		}
		var ce *connect.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "told to fail with internal", ce.Message(), "the handler's message")
		assert.True(t, connectbreaker.ShedByServer(err))
		assert.Equal(t, "SHEDDING", errorInfo(err).GetReason())
		return
	}
	t.Fatal("no call was served")
}

// switchBreaker admits every call until drop is set, then drops every
// call.
type switchBreaker struct {
	breaker.Breaker
	drop *atomic.Bool
}

func (b switchBreaker) Allow() (srebreaker.Promise, error) {
	if b.drop.Load() {
		return nil, breaker.ErrServiceUnavailable
	}
	return b.Breaker.Allow()
}

func TestHandlerInterceptor_probesADependencyThatLooksDown(t *testing.T) {
	var drop atomic.Bool
	b := switchBreaker{Breaker: breaker.MustNew(), drop: &drop}
	hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithBreakers(func(string) breaker.Breaker { return b }))
	es, base := startServer(t, connect.WithInterceptors(hi))
	cs := newClients(t, wires[0], base)
	for range 10 { // served, and failed: the dependency looks down
		_, _ = cs.unary(context.Background(), "code:13")
	}
	drop.Store(true)
	before := es.received.Load()
	for range 400 {
		_, _ = cs.unary(context.Background(), "code:13")
	}
	assert.Equal(t, int64(400/40), es.received.Load()-before, "the 40th call in a row the breaker drops, served as a probe")

	// A probe succeeds: the dependency healed, and every call is served
	// until one fails.
	for es.received.Load() == before+400/40 {
		_, _ = cs.unary(context.Background(), "ok")
	}
	before = es.received.Load()
	for range 5 {
		_, err := cs.unary(context.Background(), "ok")
		assert.NoError(t, err)
	}
	assert.Equal(t, int64(5), es.received.Load()-before, "served while the breaker drops them")
}

// levelSeen runs a handler interceptor with opts in front of a handler
// that reports the level in its context and the CriticalityHeader it
// gets, and calls it with claim.
func levelSeen(t *testing.T, claim string, opts ...connectbreaker.HandlerOption) (criticality.Level, []string) {
	t.Helper()
	type seen struct {
		level  criticality.Level
		header []string
	}
	got := make(chan seen, 1)
	hi := connectbreaker.MustNewHandlerInterceptor(opts...)
	mux := http.NewServeMux()
	mux.Handle(callProcedure, connect.NewUnaryHandler(callProcedure,
		func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
			got <- seen{criticality.From(ctx), req.Header().Values(connectbreaker.CriticalityHeader)}
			return connect.NewResponse(req.Msg), nil
		}, connect.WithInterceptors(hi)))
	base := serve(t, mux)
	req := connect.NewRequest(wrapperspb.String("v"))
	if claim != "" {
		req.Header().Set(connectbreaker.CriticalityHeader, claim)
	}
	_, err := connect.NewClient[msg, msg](http.DefaultClient, base+callProcedure).CallUnary(context.Background(), req)
	require.NoError(t, err)
	s := <-got
	return s.level, s.header
}

func TestHandlerInterceptor_criticalityPolicy(t *testing.T) {
	reg := func() connectbreaker.HandlerOption { return connectbreaker.WithRegistry(breaker.MustNewRegistry()) }
	level, header := levelSeen(t, "CRITICAL_PLUS", reg())
	assert.Equal(t, criticality.Default, level, "ignored by default")
	assert.Empty(t, header, "a claim not believed is not passed on")

	level, header = levelSeen(t, "CRITICAL_PLUS", reg(),
		connectbreaker.WithCriticalityPolicy(connectbreaker.TrustHeader(criticality.Critical)))
	assert.Equal(t, criticality.Critical, level, "trusted, capped")
	assert.Empty(t, header, "the default level, which the handler's calls do not send")

	level, header = levelSeen(t, "SHEDDABLE", reg(),
		connectbreaker.WithCriticalityPolicy(connectbreaker.TrustHeader(criticality.CriticalPlus)))
	assert.Equal(t, criticality.Sheddable, level)
	assert.Equal(t, []string{"SHEDDABLE"}, header)

	byProcedure := func(_ context.Context, spec connect.Spec, _ connect.Peer, _ http.Header) criticality.Level {
		if spec.Procedure == callProcedure {
			return criticality.SheddablePlus
		}
		return criticality.Default
	}
	level, header = levelSeen(t, "CRITICAL_PLUS", reg(),
		connectbreaker.WithCriticalityPolicy(connectbreaker.LevelFunc(byProcedure)))
	assert.Equal(t, criticality.SheddablePlus, level, "the server's choice")
	assert.Equal(t, []string{"SHEDDABLE_PLUS"}, header)
}

func TestNewHandlerInterceptor_invalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  connectbreaker.HandlerOption
		want string
	}{
		{"nil registry", connectbreaker.WithRegistry(nil),
			"connectbreaker: invalid option: WithRegistry(nil): registry must not be nil"},
		{"max not a level", connectbreaker.WithCriticalityPolicy(connectbreaker.TrustHeader(criticality.Level(9))),
			"connectbreaker: invalid option: WithCriticalityPolicy(TrustHeader(criticality.Level(9))): max must be one of the four levels, criticality.CriticalPlus to criticality.Sheddable"},
		{"nil level function", connectbreaker.WithCriticalityPolicy(connectbreaker.LevelFunc(nil)),
			"connectbreaker: invalid option: WithCriticalityPolicy(LevelFunc(nil)): function must not be nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hi, err := connectbreaker.NewHandlerInterceptor(tc.opt)
			assert.Nil(t, hi)
			require.ErrorIs(t, err, connectbreaker.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
			assert.PanicsWithError(t, tc.want, func() { connectbreaker.MustNewHandlerInterceptor(tc.opt) })
		})
	}
}

func TestAttemptOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"none", http.Header{}, 1},
		{"attempt header", http.Header{"Srebreaker-Attempt": {"3"}}, 3},
		{"not a number", http.Header{"Srebreaker-Attempt": {"x"}}, 1},
		{"capped", http.Header{"Srebreaker-Attempt": {"100000"}}, 100},
		{"gRPC's previous attempts", http.Header{"Grpc-Previous-Rpc-Attempts": {"1", "2"}}, 3},
		{"the attempt header first", http.Header{"Srebreaker-Attempt": {"2"}, "Grpc-Previous-Rpc-Attempts": {"5"}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, connectbreaker.AttemptOf(tc.header))
		})
	}
}

// TestShedByServer_errorInfo: an answer of grpcbreaker's server
// interceptors, reached over gRPC, carries its advice in an ErrorInfo
// detail alone.
func TestShedByServer_errorInfo(t *testing.T) {
	mark := func(domain, advice string) error {
		e := connect.NewError(connect.CodeUnavailable, errors.New("shed"))
		d, err := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: "SHED", Domain: domain,
			Metadata: map[string]string{"retry": advice}})
		require.NoError(t, err)
		e.AddDetail(d)
		return e
	}
	assert.True(t, connectbreaker.ShedByServer(mark(connectbreaker.ErrorDomain, "later")))
	assert.False(t, connectbreaker.RetryRefused(mark(connectbreaker.ErrorDomain, "later")))
	assert.True(t, connectbreaker.RetryRefused(mark(connectbreaker.ErrorDomain, "no")))
	assert.False(t, connectbreaker.ShedByServer(mark("example.com", "no")), "another domain's")
	assert.False(t, connectbreaker.ShedByServer(connect.NewError(connect.CodeUnavailable, errors.New("down"))))
	assert.False(t, connectbreaker.ShedByServer(errors.New("not connect's")))
	assert.False(t, connectbreaker.ShedByServer(nil))
}
