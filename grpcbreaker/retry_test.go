package grpcbreaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/retry"
)

// pushbackServer fails every call with code, and a pushback trailer when
// pushback is not empty.
func pushbackServer(t *testing.T, code codes.Code, pushback string) string {
	t.Helper()
	_, addr := startServer(t, grpc.UnaryInterceptor(func(ctx context.Context, _ any, _ *grpc.UnaryServerInfo,
		_ grpc.UnaryHandler) (any, error) {
		if pushback != "" {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(grpcbreaker.PushbackTrailer, pushback))
		}
		return nil, status.Error(code, "failed")
	}))
	return addr
}

func TestUnaryClientInterceptor_pushback(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      codes.Code
		pushback  string
		wantOK    bool
		wantD     time.Duration
		wantRetry bool
	}{
		{name: "no trailer", code: codes.Unavailable, wantRetry: true},
		{name: "retry after", code: codes.Unavailable, pushback: "250", wantOK: true, wantD: 250 * time.Millisecond, wantRetry: true},
		{name: "bounded", code: codes.Unavailable, pushback: "99999999999999999999", wantOK: true, wantD: 5 * time.Minute, wantRetry: true},
		{name: "don't retry", code: codes.Unavailable, pushback: "-1", wantOK: true},
		{name: "not a number", code: codes.ResourceExhausted, pushback: "soon", wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := pushbackServer(t, tc.code, tc.pushback)
			cc := dial(t, addr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithBreakers(newRegistry().Get))))
			_, err := call(context.Background(), cc, "hello")
			require.Error(t, err)
			assert.Equal(t, tc.code, status.Code(err), "the call's status is kept")
			d, again, ok := retry.PushbackOf(err)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.wantD, d)
			assert.Equal(t, tc.wantRetry, again)
			assert.Equal(t, tc.wantRetry, grpcbreaker.Retriable(err))
		})
	}
}

func TestRetriable(t *testing.T) {
	drop := breaker.MustNew()
	for range 100 { // fail it until it drops
		if p, err := drop.Allow(); err == nil {
			p.Reject("down")
		}
	}
	assert.True(t, grpcbreaker.Retriable(status.Error(codes.Unavailable, "x")))
	assert.True(t, grpcbreaker.Retriable(status.Error(codes.ResourceExhausted, "x")))
	assert.False(t, grpcbreaker.Retriable(status.Error(codes.Internal, "x")))
	assert.False(t, grpcbreaker.Retriable(nil))
	assert.False(t, grpcbreaker.Retriable(errors.New("no status")))

	addr := pushbackServer(t, codes.Unavailable, "")
	cc := dial(t, addr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(
		grpcbreaker.WithBreakers(func(string) breaker.Breaker { return drop }))))
	var err error
	for range 100 {
		if _, err = call(context.Background(), cc, "hello"); errors.Is(err, breaker.ErrServiceUnavailable) {
			break
		}
	}
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.False(t, grpcbreaker.Retriable(err), "a drop of the client's breaker")
}

func TestUnaryClientInterceptor_retryBudget(t *testing.T) {
	_, addr := startServer(t)
	reg := breaker.MustNewRegistry()
	cc := dial(t, addr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(reg))))
	_, err := call(context.Background(), cc, "hello")
	require.NoError(t, err)
	retryCtx := retry.WithAttempt(context.Background(), 2)
	for range retry.DefaultBudgetFloor {
		_, err = call(retryCtx, cc, "hello")
		require.NoError(t, err, "the floor grants a few retries")
	}
	_, err = call(retryCtx, cc, "hello")
	assert.ErrorIs(t, err, retry.ErrBudgetSpent)
	assert.NotErrorIs(t, err, breaker.ErrServiceUnavailable, "a spent budget is not a drop")
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.False(t, grpcbreaker.Retriable(err))

	mwCtx := metadata.AppendToOutgoingContext(context.Background(), "x-retry-attempt", "1")
	_, err = call(mwCtx, cc, "hello")
	assert.ErrorIs(t, err, retry.ErrBudgetSpent, "a retry numbered by go-grpc-middleware")
}

func TestStreamClientInterceptor_pushback(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pushback  string
		wantOK    bool
		wantRetry bool
	}{
		{name: "no trailer", wantRetry: true},
		{name: "retry after", pushback: "250", wantOK: true, wantRetry: true},
		{name: "don't retry", pushback: "-1", wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startServer(t, grpc.StreamInterceptor(func(_ any, ss grpc.ServerStream, _ *grpc.StreamServerInfo,
				_ grpc.StreamHandler) error {
				if tc.pushback != "" {
					ss.SetTrailer(metadata.Pairs(grpcbreaker.PushbackTrailer, tc.pushback))
				}
				return status.Error(codes.Unavailable, "overloaded")
			}))
			cc := dial(t, addr, grpc.WithStreamInterceptor(grpcbreaker.StreamClientInterceptor(grpcbreaker.WithBreakers(newRegistry().Get))))
			stream, err := cc.NewStream(context.Background(), &listDesc, listMethod)
			require.NoError(t, err)
			require.NoError(t, stream.SendMsg(wrapperspb.String("3")))
			require.NoError(t, stream.CloseSend())
			err = stream.RecvMsg(new(wrapperspb.StringValue))
			require.Error(t, err)
			assert.Equal(t, codes.Unavailable, status.Code(err), "the stream's status is kept")
			d, again, ok := retry.PushbackOf(err)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.wantRetry, again)
			if tc.pushback == "250" {
				assert.Equal(t, 250*time.Millisecond, d)
			}
			assert.Equal(t, tc.wantRetry, grpcbreaker.Retriable(err))
		})
	}
}
