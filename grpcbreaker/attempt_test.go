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

func TestAttemptOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   int
	}{
		{name: "absent", want: 1},
		{name: "no previous", values: []string{"0"}, want: 1},
		{name: "second", values: []string{"1"}, want: 2},
		{name: "negative", values: []string{"-1"}, want: 1},
		{name: "not a number", values: []string{"x"}, want: 1},
		{name: "capped", values: []string{"500"}, want: grpcbreaker.MaxAttempt},
		{name: "beyond an int", values: []string{"99999999999999999999999"}, want: grpcbreaker.MaxAttempt},
		{name: "highest of several", values: []string{"1", "3", "x"}, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := metadata.MD{}
			if tc.values != nil {
				md[grpcbreaker.PreviousAttemptsKey] = tc.values
			}
			assert.Equal(t, tc.want, grpcbreaker.AttemptOf(metadata.NewIncomingContext(context.Background(), md)))
		})
	}
	assert.Equal(t, 1, grpcbreaker.AttemptOf(context.Background()), "no metadata at all")
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
