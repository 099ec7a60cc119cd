package connectbreaker

import (
	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
)

// WithBreakers makes an interceptor take its breakers from get rather than
// from a registry, for tests that wrap a registry's breakers to count what
// is reported on them.
func WithBreakers(get func(key string) breaker.Breaker) Option {
	return func(o *options) { o.get = get }
}

// MemoKey is the memo of DefaultKey's keys, for its test.
func MemoKey(host, procedure string) string {
	var k keyMemo
	return k.key(host, procedure)
}

// ForceOverload sets the overload limit of h's key to limit calls in the
// handlers at once, overloaded or not, for tests that need its queue full
// without driving it there. It reaches the limit as admit does: the
// memory of the key, and the key's breaker, whose Stats carry its
// figures.
func ForceOverload(h *HandlerInterceptor, key string, limit float64, overloaded bool) {
	h.memories.Of(key).Limiter(h.o.get(key), h.o.clock).Force(limit, overloaded)
}

// WithOverloadClock makes a HandlerInterceptor's overload limits, made
// after, read time from c, for tests in which no time passes but what
// they add.
func WithOverloadClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}
