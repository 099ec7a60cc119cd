package connectbreaker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/heldcalls"
)

// The benchmarks measure what the interceptors add to a call: a Connect
// call through a client with and without a ClientInterceptor, over an
// http.Client stand-in that answers in process (a network's time and
// noise would hide tens of nanoseconds), and each interceptor's own work
// around a call that does nothing, beside the breaker's Allow and Accept
// alone. Every breaker is admitted every call: a healthy dependency.
//
//	go test -run '^$' -bench . -benchmem -count 10 | tee bench.txt
//	benchstat -col /interceptor bench.txt  # a call, without and with
//	benchstat -col /side bench.txt         # each side's own work

var sinkErr error

// answering is a connect.HTTPClient that answers every unary call of the
// Connect protocol with payload, without a network.
type answering struct{ payload []byte }

func (a answering) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/proto"}},
		Body:          io.NopCloser(bytes.NewReader(a.payload)),
		ContentLength: int64(len(a.payload)),
		Request:       req,
	}, nil
}

func BenchmarkClient_CallUnary(b *testing.B) {
	payload, err := proto.Marshal(wrapperspb.String("pong"))
	require.NoError(b, err)
	hc := answering{payload}
	const url = "http://127.0.0.1:1" + callProcedure // never dialled
	for _, bc := range []struct {
		name string
		opts []connect.ClientOption
	}{
		{"interceptor=none", nil},
		{"interceptor=breaker", []connect.ClientOption{connect.WithInterceptors(
			connectbreaker.MustNewClientInterceptor(connectbreaker.WithRegistry(breaker.MustNewRegistry())))}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := connect.NewClient[msg, msg](hc, url, bc.opts...)
			req := connect.NewRequest(wrapperspb.String("ping"))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, sinkErr = c.CallUnary(ctx, req)
			}
			if sinkErr != nil {
				b.Fatal(sinkErr)
			}
		})
	}
}

// capturedRequest returns the request connect hands a client's
// interceptors for a unary call of the test service's Call.
func capturedRequest(t testing.TB) connect.AnyRequest {
	var got connect.AnyRequest
	capture := connect.UnaryInterceptorFunc(func(connect.UnaryFunc) connect.UnaryFunc {
		return func(_ context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			got = req
			return connect.NewResponse(wrapperspb.String("pong")), nil
		}
	})
	c := connect.NewClient[msg, msg](answering{}, "http://127.0.0.1:1"+callProcedure, connect.WithInterceptors(capture))
	_, err := c.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("ping")))
	require.NoError(t, err)
	require.True(t, got.Spec().IsClient)
	return got
}

// capturedHandlerRequest returns the request connect hands a handler's
// interceptors for a unary call of the test service's Call.
func capturedHandlerRequest(t testing.TB) connect.AnyRequest {
	got := make(chan connect.AnyRequest, 1)
	capture := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			select {
			case got <- req:
			default:
			}
			return next(ctx, req)
		}
	})
	_, base := startServer(t, connect.WithInterceptors(capture))
	_, err := newClients(t, wires[0], base).unary(context.Background(), "ping")
	require.NoError(t, err)
	req := <-got
	require.False(t, req.Spec().IsClient)
	return req
}

// answered is a UnaryFunc that answers at once.
func answered(resp connect.AnyResponse) connect.UnaryFunc {
	return func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) { return resp, nil }
}

var sinkResp connect.AnyResponse

func BenchmarkInterceptor_WrapUnary(b *testing.B) {
	next := answered(connect.NewResponse(wrapperspb.String("pong")))
	ctx := context.Background()
	creq, hreq := capturedRequest(b), capturedHandlerRequest(b)
	for _, bc := range []struct {
		name string
		f    connect.UnaryFunc
		req  connect.AnyRequest
	}{
		{"side=none", next, creq},
		{"side=client", connectbreaker.MustNewClientInterceptor(connectbreaker.WithRegistry(breaker.MustNewRegistry())).WrapUnary(next), creq},
		{"side=handler", connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(breaker.MustNewRegistry())).WrapUnary(next), hreq},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkResp, sinkErr = bc.f(ctx, bc.req)
			}
		})
	}
}

// BenchmarkBreaker_AllowAccept is the breaker's own work on a call, which
// the interceptors' is measured against.
func BenchmarkBreaker_AllowAccept(b *testing.B) {
	br := breaker.MustNewRegistry().Get("127.0.0.1:1" + callProcedure)
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Accept()
	}
}

func TestInterceptors_WrapUnary_allocs(t *testing.T) {
	next := answered(connect.NewResponse(wrapperspb.String("pong")))
	ctx := context.Background()
	creq, hreq := capturedRequest(t), capturedHandlerRequest(t)
	client := connectbreaker.MustNewClientInterceptor(connectbreaker.WithRegistry(breaker.MustNewRegistry())).WrapUnary(next)
	handler := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(breaker.MustNewRegistry())).WrapUnary(next)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { sinkResp, sinkErr = client(ctx, creq) }), "a client's call")
	// A served call's context holds a chain.Mark, one allocation: see
	// package chain.
	assert.Equal(t, 1.0, testing.AllocsPerRun(1000, func() { sinkResp, sinkErr = handler(ctx, hreq) }), "a handler's call")
}

// rejectingUnary returns a HandlerInterceptor's wrapping of a unary
// handler whose overload limit, forced to one call in the handler and
// overloaded, holds one SHEDDABLE call in the handler and one queued, so
// that a third SHEDDABLE call is rejected at once; a request of that
// level (the one connect hands a handler's interceptors, its header
// claiming SHEDDABLE); and stop, which lets the two calls go.
func rejectingUnary(tb testing.TB) (call connect.UnaryFunc, sheddable connect.AnyRequest, stop func()) {
	tb.Helper()
	reg := breaker.MustNewRegistry()
	hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(reg),
		connectbreaker.WithCriticalityPolicy(connectbreaker.TrustHeader(criticality.CriticalPlus)),
		connectbreaker.WithOverloadClock(clock.NewMock())) // no time passes: the queued call stays
	connectbreaker.ForceOverload(hi, callKey, 1, true)
	sheddable = capturedHandlerRequest(tb)
	sheddable.Header().Set(connectbreaker.CriticalityHeader, criticality.Sheddable.String())
	gate := heldcalls.New()
	held := hi.WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		gate.Hold()
		return connect.NewResponse(wrapperspb.String("pong")), nil
	})
	overload := func() *breaker.OverloadStats { return reg.Get(callKey).Stats().Overload }
	gate.Fill(func() { _, _ = held(context.Background(), sheddable) }, func() bool { return overload().Queued > 0 })
	return held, sheddable, func() {
		if o := overload(); o.Rejected == [4]int64{} {
			tb.Errorf("no call was rejected: %+v", o)
		}
		gate.Release()
	}
}

// BenchmarkInterceptor_WrapUnary_rejected is what a HandlerInterceptor
// spends on a call its overload limit rejects at once (see
// rejectingUnary): unavailable before the handler runs.
func BenchmarkInterceptor_WrapUnary_rejected(b *testing.B) {
	call, req, stop := rejectingUnary(b)
	defer stop()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sinkResp, sinkErr = call(ctx, req)
	}
	if !connectbreaker.Overloaded(sinkErr) {
		b.Fatalf("the call was not rejected: %v", sinkErr)
	}
}

// A call the overload limit rejects costs a HandlerInterceptor four
// allocations, connect's: the connect.Error it answers with (the error,
// its metadata's map and group, its detail's slice), which connect's
// handler and the interceptors outside may change and so is made per
// call. The breaker is asked at the call's level without a context that
// carries it, made only for a call served; the metadata's values and the
// detail are made once.
func TestHandlerInterceptor_rejectionAllocatesOnlyItsError(t *testing.T) {
	call, req, stop := rejectingUnary(t)
	defer stop()
	ctx := context.Background()
	var err error
	assert.Equal(t, 4.0, testing.AllocsPerRun(100, func() { _, err = call(ctx, req) }))
	assert.True(t, connectbreaker.Overloaded(err), "the call was rejected: %v", err)
	var ce *connect.Error
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, connect.CodeUnavailable, ce.Code())
	assert.Equal(t, http.Header{
		connectbreaker.RetryHeader:    {connectbreaker.RetryLater},
		connectbreaker.OverloadHeader: {"1"},
		"Grpc-Retry-Pushback-Ms":      {"1000"},
	}, ce.Meta())
	ce.Meta().Add(connectbreaker.RetryHeader, "changed by an interceptor outside")
	_, err = call(ctx, req)
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, []string{connectbreaker.RetryLater}, ce.Meta().Values(connectbreaker.RetryHeader),
		"an answer's metadata is its own")
}

// A call a HandlerInterceptor serves costs it one allocation, the context
// its handler gets, which holds the call's chain.Mark and, at a level
// other than the default, the level too.
func TestHandlerInterceptor_servedCallAllocatesOnce(t *testing.T) {
	hi := connectbreaker.MustNewHandlerInterceptor(connectbreaker.WithRegistry(breaker.MustNewRegistry()),
		connectbreaker.WithCriticalityPolicy(connectbreaker.TrustHeader(criticality.CriticalPlus)))
	var seen criticality.Level
	call := hi.WrapUnary(func(ctx context.Context, _ connect.AnyRequest) (connect.AnyResponse, error) {
		seen = criticality.From(ctx)
		return sinkResp, nil
	})
	req := capturedHandlerRequest(t)
	for _, level := range []criticality.Level{criticality.Default, criticality.Sheddable} {
		req.Header().Set(connectbreaker.CriticalityHeader, level.String())
		assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _, _ = call(context.Background(), req) }), "at %v", level)
		assert.Equal(t, level, seen, "the handler's context carries the level")
	}
}
