package grpcbreaker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/retry"
)

// TestAttemptOf reads the wire only: serverside's TestAfterPrevious holds
// the rules.
func TestAttemptOf(t *testing.T) {
	previous := func(vs ...string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.MD{grpcbreaker.PreviousAttemptsKey: vs})
	}
	assert.Equal(t, 1, grpcbreaker.AttemptOf(context.Background()), "no metadata at all")
	assert.Equal(t, 1, grpcbreaker.AttemptOf(previous()), "no previous attempts")
	assert.Equal(t, 2, grpcbreaker.AttemptOf(previous("1")))
	assert.Equal(t, 100, grpcbreaker.AttemptOf(previous("500")), "capped at 100, as its doc says")
	assert.Equal(t, 4, grpcbreaker.AttemptOf(previous("1", "3", "x")), "the highest of several")
}

func TestUnaryClientInterceptor_sendsAttempt(t *testing.T) {
	seen := make(chan int, 1)
	_, addr := startServer(t, grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo,
		handler grpc.UnaryHandler) (any, error) {
		seen <- grpcbreaker.AttemptOf(ctx)
		return handler(ctx, req)
	}))
	cc := dial(t, addr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithBreakers(newRegistry().Get))))
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want int
	}{
		{name: "outside a retry loop", ctx: context.Background(), want: 1},
		{name: "first attempt", ctx: retry.WithAttempt(context.Background(), 1), want: 1},
		{name: "third attempt", ctx: retry.WithAttempt(context.Background(), 3), want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(tc.ctx, cc, "hello")
			require.NoError(t, err)
			assert.Equal(t, tc.want, <-seen)
		})
	}
}
