// Package proba answers "true with probability p", the coin a breaker tosses
// before each call.
//
// [New] draws from the runtime's per-thread wyrand generator, the one the
// runtime uses for its own cheap randomness: it needs no lock and costs
// about a nanosecond, and a breaker draws once per call it may drop. It is not
// cryptographic, and need not be. [NewSeeded] draws from a seeded source, so
// that a test or a simulation sees the same sequence on every run.
//
// A Proba is safe for concurrent use by multiple goroutines.
package proba
