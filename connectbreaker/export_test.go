package connectbreaker

import "github.com/srebreaker/srebreaker/breaker"

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
