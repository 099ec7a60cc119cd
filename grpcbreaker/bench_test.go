package grpcbreaker_test

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/internal/heldcalls"
)

var (
	sinkResp any
	sinkErr  error
)

// BenchmarkServerInterceptors_Unary is what the unary server interceptor
// adds to a call it serves, with its overload limit on (the default) and
// off, and to a call claiming SHEDDABLE to interceptors that believe it,
// against the handler called alone.
func BenchmarkServerInterceptors_Unary(b *testing.B) {
	handler := func(context.Context, any) (any, error) { return "pong", nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/test.Echo/Ping"}
	for _, bc := range []struct {
		name  string
		on    bool
		none  bool
		level criticality.Level
	}{{"none", false, true, criticality.Default}, {"limit-on", true, false, criticality.Default},
		{"limit-off", false, false, criticality.Default}, {"limit-on-sheddable", true, false, criticality.Sheddable}} {
		b.Run(bc.name, func(b *testing.B) {
			call, ctx := servingUnary(b, bc.on, bc.none, bc.level)
			b.ReportAllocs()
			for b.Loop() {
				sinkResp, sinkErr = call(ctx, "ping", info, handler)
			}
		})
	}
}

// servingUnary returns the unary server interceptor of server
// interceptors that believe a call's claim, with their overload limit on
// or off (none: no interceptor, the handler called alone), and the
// context of a call claiming level (none for the default).
func servingUnary(tb testing.TB, on, none bool, level criticality.Level) (grpc.UnaryServerInterceptor, context.Context) {
	tb.Helper()
	ctx := context.Background()
	if level != criticality.Default {
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(grpcbreaker.CriticalityKey, level.String()))
	}
	if none {
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(ctx, req)
		}, ctx
	}
	s, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(breaker.MustNewRegistry()),
		grpcbreaker.WithOverloadLimit(on), grpcbreaker.WithCriticalityPolicy(grpcbreaker.TrustMetadata(criticality.CriticalPlus)))
	if err != nil {
		tb.Fatal(err)
	}
	return s.Unary(), ctx
}

// A call the unary server interceptor serves costs it one allocation, the
// context its handler gets, which holds the call's chain.Mark and, at a
// level other than the default, the level too; and, for a call that
// claims a level, gRPC's copy of the claim.
func TestServerInterceptors_servedCallAllocatesOnce(t *testing.T) {
	info := &grpc.UnaryServerInfo{FullMethod: benchMethod}
	for _, tc := range []struct {
		level criticality.Level
		want  float64
	}{{criticality.Default, 1}, {criticality.Sheddable, 2}} {
		call, ctx := servingUnary(t, true, false, tc.level)
		var seen criticality.Level
		handler := func(ctx context.Context, _ any) (any, error) {
			seen = criticality.From(ctx)
			return "pong", nil
		}
		assert.Equal(t, tc.want, testing.AllocsPerRun(100, func() { _, _ = call(ctx, "ping", info, handler) }),
			"at %v", tc.level)
		assert.Equal(t, tc.level, seen, "the handler's context carries the level")
	}
}

// rejectingUnary returns the unary server interceptor of server
// interceptors whose overload limit, forced to one call in the handler
// and overloaded, holds one SHEDDABLE call in the handler and one queued,
// so that a third SHEDDABLE call is rejected at once; the context of such
// a call, whose server stream is stream; and stop, which lets the two
// calls go.
func rejectingUnary(tb testing.TB, stream grpc.ServerTransportStream) (call grpc.UnaryServerInterceptor,
	sheddable context.Context, stop func()) {
	tb.Helper()
	reg := breaker.MustNewRegistry()
	s, err := grpcbreaker.NewServerInterceptors(grpcbreaker.WithRegistry(reg),
		grpcbreaker.WithCriticalityPolicy(grpcbreaker.TrustMetadata(criticality.CriticalPlus)),
		grpcbreaker.WithOverloadClock(clock.NewMock())) // no time passes: the queued call stays
	if err != nil {
		tb.Fatal(err)
	}
	key := serverKey(benchMethod)
	grpcbreaker.ForceOverload(s, key, 1, true)
	call = s.Unary()
	sheddable = metadata.NewIncomingContext(grpc.NewContextWithServerTransportStream(context.Background(), stream),
		metadata.Pairs(grpcbreaker.CriticalityKey, criticality.Sheddable.String()))
	info := &grpc.UnaryServerInfo{FullMethod: benchMethod}
	gate := heldcalls.New()
	held := func(context.Context, any) (any, error) {
		gate.Hold()
		return "pong", nil
	}
	overload := func() *breaker.OverloadStats { return reg.Get(key).Stats().Overload }
	gate.Fill(func() { _, _ = call(sheddable, "ping", info, held) }, func() bool { return overload().Queued > 0 })
	return call, sheddable, func() {
		if o := overload(); o.Rejected == [4]int64{} {
			tb.Errorf("no call was rejected: %+v", o)
		}
		gate.Release()
	}
}

const benchMethod = "/test.Echo/Ping"

// nopStream is the stream a unary call's context holds on a server, which
// grpc.SetTrailer sets its trailer on; it keeps nothing, so that the
// benchmark measures the interceptor alone.
type nopStream struct{}

func (nopStream) Method() string               { return benchMethod }
func (nopStream) SetHeader(metadata.MD) error  { return nil }
func (nopStream) SendHeader(metadata.MD) error { return nil }
func (nopStream) SetTrailer(metadata.MD) error { return nil }

// BenchmarkServerInterceptors_Unary_rejected is what the unary server
// interceptor spends on a call its overload limit rejects at once (see
// rejectingUnary): Unavailable before the handler runs.
func BenchmarkServerInterceptors_Unary_rejected(b *testing.B) {
	call, ctx, stop := rejectingUnary(b, nopStream{})
	defer stop()
	info := &grpc.UnaryServerInfo{FullMethod: benchMethod}
	handler := func(context.Context, any) (any, error) { return "pong", nil }
	b.ReportAllocs()
	for b.Loop() {
		sinkResp, sinkErr = call(ctx, "ping", info, handler)
	}
	if !grpcbreaker.Overloaded(sinkErr) {
		b.Fatalf("the call was not rejected: %v", sinkErr)
	}
}

// trailerStream is a server stream that keeps the trailers it is set.
type trailerStream struct {
	nopStream
	trailers []metadata.MD
}

func (s *trailerStream) SetTrailer(md metadata.MD) error {
	s.trailers = append(s.trailers, md)
	return nil
}

// A call the overload limit rejects costs the unary server interceptor
// one allocation, gRPC's: the copy of the claim that
// metadata.ValueFromIncomingContext returns, read once a call. The
// breaker is asked at the call's level without a context that carries
// it, made only for a call served; the rejection's status, error and
// trailer are made once.
func TestServerInterceptors_rejectionAllocatesOnlyTheClaimsCopy(t *testing.T) {
	stream := &trailerStream{}
	call, ctx, stop := rejectingUnary(t, stream)
	defer stop()
	info := &grpc.UnaryServerInfo{FullMethod: benchMethod}
	handler := func(context.Context, any) (any, error) {
		t.Error("the handler ran for a rejected call")
		return "pong", nil
	}
	var err error
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _, err = call(ctx, "ping", info, handler) }))
	assert.True(t, grpcbreaker.Overloaded(err), "the call was rejected: %v", err)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	require.NotEmpty(t, stream.trailers)
	for _, md := range stream.trailers {
		assert.Equal(t, metadata.Pairs(grpcbreaker.PushbackTrailer, "1000"), md)
	}
}
