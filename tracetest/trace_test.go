package tracetest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/connectbreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/otelbreaker"
)

// recorder returns a tracer provider whose ended spans the recorder holds,
// with otelbreaker.TraceDrops on for the test.
func recorder(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(otelbreaker.TraceDrops())
	return rec, tp
}

// dropEvent returns the attributes of span's one drop event; it fails the
// test unless there is exactly one.
func dropEvent(t *testing.T, span sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	t.Helper()
	var got []sdktrace.Event
	for _, e := range span.Events() {
		if e.Name == otelbreaker.DropEvent {
			got = append(got, e)
		}
	}
	require.Len(t, got, 1, "span %q: one drop event", span.Name())
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range got[0].Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// withDrop returns the ended spans that hold a drop event.
func withDrop(rec *tracetest.SpanRecorder) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		for _, e := range s.Events() {
			if e.Name == otelbreaker.DropEvent {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func TestTraceDrops_transportUnderOtelhttp(t *testing.T) {
	rec, tp := recorder(t)
	srv := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	reg := breaker.MustNewRegistry()
	tr, err := httpbreaker.NewTransport(nil, httpbreaker.WithRegistry(reg))
	require.NoError(t, err)
	client := &http.Client{Transport: otelhttp.NewTransport(tr, otelhttp.WithTracerProvider(tp))}

	var dropped error
	for i := 0; i < 200 && dropped == nil; i++ {
		req, err := http.NewRequestWithContext(criticality.With(context.Background(), criticality.SheddablePlus),
			http.MethodGet, srv+"/price", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err != nil {
			dropped = err
			break
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	require.ErrorIs(t, dropped, breaker.ErrServiceUnavailable, "the breaker sheds the failing host")

	spans := withDrop(rec)
	require.Len(t, spans, 1, "the dropped request's client span")
	s := spans[0]
	assert.Equal(t, codes.Error, s.Status().Code, "an error, as otelhttp marks a failed round trip")
	a := dropEvent(t, s)
	assert.Equal(t, "127.0.0.1", a[otelbreaker.BreakerKey].AsString()[:len("127.0.0.1")], "the host's breaker")
	assert.Equal(t, "SHEDDABLE_PLUS", a[otelbreaker.CriticalityKey].AsString())
	assert.Greater(t, a[otelbreaker.DropProbabilityKey].AsFloat64(), 0.0)
	assert.Contains(t, a[otelbreaker.LastFailureKey].AsString(), "500")
}

func TestTraceDrops_grpcClientUnderOtelgrpc(t *testing.T) {
	rec, tp := recorder(t)
	addr := serveGRPC(t)
	reg := breaker.MustNewRegistry()
	interceptors, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(reg))
	require.NoError(t, err)
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp))),
		grpc.WithUnaryInterceptor(interceptors.Unary()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })

	// The work that makes the calls: an incoming request's server span, say.
	// A dropped call never starts, so otelgrpc makes no client span for it.
	ctx, parent := tp.Tracer("app").Start(context.Background(), "handle order")
	var dropped error
	for i := 0; i < 200 && dropped == nil; i++ {
		err := cc.Invoke(ctx, "/test.Dep/Call", wrapperspb.String("x"), new(wrapperspb.StringValue))
		if status.Code(err) == grpccodes.Unavailable && status.Convert(err).Message() != "down" {
			dropped = err
		}
	}
	require.Error(t, dropped, "the breaker sheds the failing method")
	parent.End()

	spans := withDrop(rec)
	require.Len(t, spans, 1, "the span of the work that made the call")
	assert.Equal(t, "handle order", spans[0].Name())
	s := spans[0]
	assert.Equal(t, codes.Error, s.Status().Code)
	a := dropEvent(t, s)
	assert.Contains(t, a[otelbreaker.BreakerKey].AsString(), "/test.Dep/Call")
	assert.Equal(t, "down", a[otelbreaker.LastFailureKey].AsString()[len(a[otelbreaker.LastFailureKey].AsString())-4:])
}

func TestTraceDrops_doCtxInASpanOfOnesOwn(t *testing.T) {
	rec, tp := recorder(t)
	b := breaker.MustNew(breaker.WithName("ledger"))
	for range 100 {
		if p, err := b.Allow(); err == nil {
			p.Reject("timeout")
		}
	}
	ctx, span := tp.Tracer("app").Start(context.Background(), "post entry")
	var err error
	for err == nil {
		err = b.DoCtx(ctx, func() error { return nil })
	}
	span.End()
	s := withDrop(rec)
	require.Len(t, s, 1)
	a := dropEvent(t, s[0])
	assert.Equal(t, "ledger", a[otelbreaker.BreakerKey].AsString())
	assert.Equal(t, "timeout", a[otelbreaker.LastFailureKey].AsString())
	assert.Equal(t, err.Error(), s[0].Status().Description)
}

// serveHTTP serves h on 127.0.0.1 until the test ends and returns its URL.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

// serveGRPC serves test.Dep/Call, which always fails with Unavailable
// "down", on 127.0.0.1 until the test ends, and returns its address.
func serveGRPC(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "test.Dep",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Call", Handler: func(_ any, _ context.Context, dec func(any) error,
			_ grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(new(wrapperspb.StringValue)); err != nil {
				return nil, err
			}
			return nil, status.Error(grpccodes.Unavailable, "down")
		}}},
	}, struct{}{})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

func TestTraceDrops_connectClient(t *testing.T) {
	rec, tp := recorder(t)
	mux := http.NewServeMux()
	mux.Handle("/test.Dep/Call", connect.NewUnaryHandler("/test.Dep/Call",
		func(context.Context, *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			return nil, connect.NewError(connect.CodeUnavailable, errors.New("down"))
		}))
	url := serveHTTP(t, mux)
	ci, err := connectbreaker.NewClientInterceptor(connectbreaker.WithRegistry(breaker.MustNewRegistry()))
	require.NoError(t, err)
	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](http.DefaultClient,
		url+"/test.Dep/Call", connect.WithInterceptors(ci))

	// A dropped call is never sent: the event goes on the span of the work
	// that made it.
	ctx, parent := tp.Tracer("app").Start(context.Background(), "render page")
	var dropped error
	for i := 0; i < 200 && dropped == nil; i++ {
		_, err := client.CallUnary(ctx, connect.NewRequest(wrapperspb.String("x")))
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			dropped = err
		}
	}
	require.Error(t, dropped, "the breaker sheds the failing procedure")
	parent.End()

	spans := withDrop(rec)
	require.Len(t, spans, 1)
	assert.Equal(t, "render page", spans[0].Name())
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	a := dropEvent(t, spans[0])
	assert.Contains(t, a[otelbreaker.BreakerKey].AsString(), "/test.Dep/Call")
	assert.Contains(t, a[otelbreaker.LastFailureKey].AsString(), "down")
}

func TestTraceDrops_handlerUnderOtelhttp(t *testing.T) {
	rec, tp := recorder(t)
	failing := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no database", http.StatusInternalServerError)
	})
	h, err := httpbreaker.NewHandler(failing)
	require.NoError(t, err)
	url := serveHTTP(t, otelhttp.NewHandler(h, "checkout", otelhttp.WithTracerProvider(tp)))

	shed := false
	for i := 0; i < 500 && !shed; i++ {
		resp, err := http.Get(url + "/checkout")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		shed = resp.StatusCode == http.StatusServiceUnavailable
	}
	require.True(t, shed, "the handler's breaker sheds the failing route")

	spans := withDrop(rec)
	require.Len(t, spans, 1, "the shed request's server span")
	a := dropEvent(t, spans[0])
	assert.Equal(t, "CRITICAL", a[otelbreaker.CriticalityKey].AsString())
	assert.Contains(t, a[otelbreaker.LastFailureKey].AsString(), "500")
}
