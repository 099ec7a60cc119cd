// Package proba answers "true with probability p", the coin a breaker tosses
// before each call.
//
// [New] draws from math/rand/v2's global source, which is safe for concurrent
// use without a lock. [NewSeeded] draws from a seeded source, so that a test
// or a simulation sees the same sequence on every run.
//
// A Proba is safe for concurrent use by multiple goroutines.
package proba
