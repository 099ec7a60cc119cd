// Package overloadhook lets the server side (internal/serverside) tie a
// server's overload limit to the breaker of the same key, so that the
// breaker's Stats carry the limit's figures and its listeners hear the
// limit's events, without package breaker exporting the link: breaker
// sets [Attach] in its init, and the server side calls it once per key.
package overloadhook

// Attach is a
// func(b breaker.Breaker, stats func() breaker.OverloadStats) func(breaker.OverloadEvent),
// held as any to keep this package free of breaker's import: b's Stats
// then carry what stats returns, and the func it returns, nil when b has
// no listener, tells b's listeners of an event of the limit. Package
// breaker sets it in its init; a caller asserts its type once.
var Attach any
