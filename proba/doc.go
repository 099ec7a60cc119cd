// Package proba answers "true with probability p", the coin a breaker tosses
// before each call.
//
// [New] draws from math/rand/v2's package-level generator, the runtime's
// per-thread ChaCha8 source: it needs no lock and costs a few nanoseconds,
// and a breaker draws once per call it may drop. It is not for security,
// and need not be. [NewSeeded] draws from a seeded source, so
// that a test or a simulation sees the same sequence on every run.
//
// A Proba is safe for concurrent use by multiple goroutines.
package proba
