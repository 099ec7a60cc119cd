package grpcbreaker

import (
	"github.com/benbjohnson/clock"
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

// WithOverloadClock makes the server interceptors' overload limits read
// time from c, for tests in which no time passes but what they add.
func WithOverloadClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}

// ForceOverload sets the overload limit of s's key to limit calls in the
// handlers at once, overloaded or not, for tests that need its queue full
// without driving it there.
func ForceOverload(s *ServerInterceptors, key string, limit float64, overloaded bool) {
	s.ms.Of(key).Limiter(s.o.get(key), s.o.clock).Force(limit, overloaded)
}
