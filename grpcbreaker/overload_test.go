package grpcbreaker_test

import (
	"context"
	"strconv"
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
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// nativeRetries is a service config that makes grpc-go retry a call to
// test.Echo that ends Unavailable, up to 4 attempts in all.
const nativeRetries = `{"methodConfig": [{"name": [{"service": "test.Echo"}], "retryPolicy": {
	"maxAttempts": 4, "initialBackoff": "0.001s", "maxBackoff": "0.001s", "backoffMultiplier": 1,
	"retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// shedding returns a registry whose breaker for the test service's Call
// sheds most calls: it has seen 200 failures and no success (the plain
// formula: it drops 195/201 of calls), on a clock that does not move.
func shedding(t *testing.T) *breaker.Registry {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)), breaker.WithPlainFormula())
	b := reg.Get(grpcbreaker.DefaultKey(context.Background(), "", callMethod))
	for i := 0; i < 200; {
		if p, err := b.Allow(); err == nil {
			p.Reject("down")
			i++
		}
	}
	return reg
}

// counting counts the attempts that reach the server.
func counting(n *atomic.Int64) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		n.Add(1)
		return h(ctx, req)
	}
}

// attemptsPerCall makes calls calls from 20 goroutines through grpc-go's
// own retries to a server whose interceptors are given, and returns the
// attempts that reached it per call.
func attemptsPerCall(t *testing.T, calls int, server ...grpc.UnaryServerInterceptor) float64 {
	var attempts atomic.Int64
	_, addr := startServer(t, grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{counting(&attempts)}, server...)...))
	cc := dial(t, addr, grpc.WithDefaultServiceConfig(nativeRetries))
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < calls; i += 20 {
				_, _ = call(context.Background(), cc, "v")
			}
		}()
	}
	wg.Wait()
	return float64(attempts.Load()) / float64(calls)
}

func TestUnaryServerInterceptor_dontRetryStopsNativeRetries(t *testing.T) {
	// A server that sheds with status Unavailable and says nothing more
	// gets each call 4 times.
	plain := func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
		return nil, status.Error(codes.Unavailable, "overloaded")
	}
	before := attemptsPerCall(t, 1000, plain)
	assert.InDelta(t, 4, before, 0.01, "attempts per call, a server without advice")

	// The interceptor sees most of what it sheds is retries and answers
	// "don't retry", which grpc-go heeds.
	after := attemptsPerCall(t, 1000, grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(shedding(t))))
	t.Logf("attempts per call through grpc-go's retries (maxAttempts 4): %.2f without advice, %.2f with it", before, after)
	assert.LessOrEqual(t, after, 1.1, "attempts per call, the interceptor's server")
}

// shedOnce makes one call to a server that sheds it and returns its error
// and trailer.
func shedOnce(t *testing.T, cc *grpc.ClientConn, previous int) (metadata.MD, error) {
	t.Helper()
	var tr metadata.MD
	ctx := context.Background()
	if previous > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, "grpc-previous-rpc-attempts", strconv.Itoa(previous))
	}
	for {
		err := cc.Invoke(ctx, callMethod, wrapperspb.String("v"), new(wrapperspb.StringValue), grpc.Trailer(&tr))
		if status.Code(err) == codes.Unavailable {
			return tr, err
		}
	}
}

func TestUnaryServerInterceptor_advice(t *testing.T) {
	_, addr := startServer(t, grpc.UnaryInterceptor(grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(shedding(t)))))
	cc := dial(t, addr)

	// First attempts: retry later, after 1 s.
	for range 10 {
		tr, err := shedOnce(t, cc, 0)
		require.True(t, grpcbreaker.ShedByServer(err), "a server's shed: %v", err)
		assert.False(t, grpcbreaker.RetryRefused(err))
		assert.Equal(t, []string{"1000"}, tr.Get(grpcbreaker.PushbackTrailer))
	}
	// Retries: once most of the sheds are retries, don't retry.
	var err error
	var tr metadata.MD
	for range 12 {
		tr, err = shedOnce(t, cc, 2)
	}
	assert.True(t, grpcbreaker.RetryRefused(err))
	assert.Equal(t, []string{"-1"}, tr.Get(grpcbreaker.PushbackTrailer))
	// And so on while the server sheds, first attempts too.
	tr, err = shedOnce(t, cc, 0)
	assert.True(t, grpcbreaker.RetryRefused(err))
	assert.Equal(t, []string{"-1"}, tr.Get(grpcbreaker.PushbackTrailer))
	assert.Equal(t, codes.Unavailable, status.Code(err))
}

func TestUnaryClientInterceptor_serverShedIsNeither(t *testing.T) {
	_, addr := startServer(t, grpc.UnaryInterceptor(grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(shedding(t)))))
	reg := newRegistry()
	cc := dial(t, addr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithBreakers(reg.Get))))
	var shed, served int
	for range 50 {
		_, err := call(context.Background(), cc, "v")
		if err != nil {
			require.True(t, grpcbreaker.ShedByServer(err), "%v", err)
			shed++
		} else {
			served++
		}
	}
	key := grpcbreaker.DefaultKey(context.Background(), addr, callMethod)
	got := reg.Outcomes(key)
	assert.Greater(t, shed, 40)
	assert.Equal(t, [3]int64{int64(served), 0, int64(shed)}, got, "successes, failures, neither")
}

func TestUnaryServerInterceptor_failureWhileSheddingCarriesAdvice(t *testing.T) {
	failOne := func(cc *grpc.ClientConn) error {
		for {
			_, err := call(context.Background(), cc, "code:13")
			if status.Code(err) == codes.Internal {
				return err
			}
		}
	}
	_, addr := startServer(t, grpc.UnaryInterceptor(grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(shedding(t)))))
	err := failOne(dial(t, addr))
	assert.True(t, grpcbreaker.ShedByServer(err), "served while shedding: %v", err)
	assert.Equal(t, "told to fail with Internal", status.Convert(err).Message(), "the handler's status, kept")

	_, addr = startServer(t, grpc.UnaryInterceptor(grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(breaker.MustNewRegistry()))))
	assert.False(t, grpcbreaker.ShedByServer(failOne(dial(t, addr))), "served by a breaker that sheds nothing")
}

func TestStreamServerInterceptor_advice(t *testing.T) {
	_, addr := startServer(t, grpc.StreamInterceptor(grpcbreaker.StreamServerInterceptor(grpcbreaker.WithRegistry(shedding(t)), grpcbreaker.WithKey(func(context.Context, string, string) string {
		return grpcbreaker.DefaultKey(context.Background(), "", callMethod) // the shedding breaker
	}))))
	cc := dial(t, addr)
	for {
		stream, err := cc.NewStream(context.Background(), &listDesc, listMethod)
		require.NoError(t, err)
		require.NoError(t, stream.SendMsg(wrapperspb.String("n:1")))
		require.NoError(t, stream.CloseSend())
		if err = stream.RecvMsg(new(wrapperspb.StringValue)); status.Code(err) != codes.Unavailable {
			continue
		}
		assert.True(t, grpcbreaker.ShedByServer(err))
		assert.Equal(t, []string{"1000"}, stream.Trailer().Get(grpcbreaker.PushbackTrailer))
		return
	}
}
