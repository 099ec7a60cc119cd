package httpbreaker

import "github.com/srebreaker/srebreaker/breaker"

// WithBreakers makes a Transport or a Handler take its breakers from get
// rather than from a registry, for tests that wrap a registry's breakers to
// count what is reported on them.
func WithBreakers(get func(key string) breaker.Breaker) Option {
	return func(o *options) { o.get = get }
}
