package grpcbreaker

import (
	"google.golang.org/grpc"

	"github.com/srebreaker/srebreaker/breaker"
)

// WithBreakers makes an interceptor take its breakers from get rather than
// from a registry, for tests that wrap a registry's breakers to count what
// is reported on them.
func WithBreakers(get func(key string) breaker.Breaker) Option {
	return func(o *options) { o.get = get }
}

// Endpoint is endpoint, for the table test.
var Endpoint = endpoint

// UnaryClientInterceptor, StreamClientInterceptor, UnaryServerInterceptor
// and StreamServerInterceptor make one interceptor with
// NewClientInterceptors or NewServerInterceptors, and panic with its error,
// for tests whose options are valid and that need one interceptor alone.
func UnaryClientInterceptor(opts ...Option) grpc.UnaryClientInterceptor {
	return must(NewClientInterceptors(opts...)).Unary()
}

func StreamClientInterceptor(opts ...Option) grpc.StreamClientInterceptor {
	return must(NewClientInterceptors(opts...)).Stream()
}

func UnaryServerInterceptor(opts ...ServerOption) grpc.UnaryServerInterceptor {
	return must(NewServerInterceptors(opts...)).Unary()
}

func StreamServerInterceptor(opts ...ServerOption) grpc.StreamServerInterceptor {
	return must(NewServerInterceptors(opts...)).Stream()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
