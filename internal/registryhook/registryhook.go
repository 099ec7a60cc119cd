// Package registryhook lets the integrations (httpbreaker, grpcbreaker,
// goredisbreaker) look up breakers for names that come from outside
// (hosts, methods, nodes) without package breaker exporting the lookup:
// breaker sets [Keyed] in its init, and the integrations call it.
package registryhook

// Keyed is a func(r *breaker.Registry, name string) breaker.Breaker, held
// as any to keep this package free of breaker's import: it returns the
// breaker r holds for a name that comes from outside, one that counts
// toward r's limit and may be forgotten past it, unlike a breaker the
// program asked for with Registry.Get. Package breaker sets it in its
// init; a caller asserts its type once, not per call.
var Keyed any
