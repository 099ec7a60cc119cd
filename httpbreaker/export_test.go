package httpbreaker

import (
	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
)

// WithBreakers makes a Transport or a Handler take its breakers from get
// rather than from a registry, for tests that wrap a registry's breakers to
// count what is reported on them.
func WithBreakers(get func(key string) breaker.Breaker) Option {
	return func(o *options) { o.get = get }
}

// ForceOverload sets the overload limit of h's key to limit calls in the
// handler at once, overloaded or not, for tests that need its queue full
// without driving it there.
func ForceOverload(h *Handler, key string, limit float64, overloaded bool) {
	ov := h.memories.Of(key)
	ov.Limiter(h.breakers(key), h.clock).Force(limit, overloaded)
}

// SetOverloadClock makes h's overload limits, made after, read time from
// c, for tests in which no time passes but what they add.
func SetOverloadClock(h *Handler, c clock.Clock) { h.clock = c }
