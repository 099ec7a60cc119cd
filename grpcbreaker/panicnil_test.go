package grpcbreaker_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/internal/panicnil"
)

// Issue 11: with GODEBUG panicnil=1, panic(nil) in a handler was taken for
// runtime.Goexit and swallowed: the interceptor returned nil, nil.
func TestUnaryServerInterceptor_panicNilWithPanicnil1(t *testing.T) {
	const name = "TestUnaryServerInterceptor_panicNilWithPanicnil1"
	if !panicnil.InChild(t, name) {
		return
	}

	r := breaker.MustNewRegistry()
	intercept := grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(r))
	info := &grpc.UnaryServerInfo{FullMethod: "/pkg.Service/Method"}
	panicked := func() (panicked bool) {
		panicked = true
		defer func() { _ = recover() }()
		_, _ = intercept(context.Background(), nil, info, func(context.Context, any) (any, error) { panic(nil) })
		return false
	}()
	assert.True(t, panicked, "panic(nil) is raised again")
	var failures int64
	r.Range(func(_ string, b breaker.Breaker) bool {
		s := b.Stats()
		failures += s.TotalFailures
		return true
	})
	assert.Equal(t, int64(1), failures, "recorded as a failure")
}
