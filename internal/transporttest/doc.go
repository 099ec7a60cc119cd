// Package transporttest holds what the tests of this module's transports
// (httpbreaker, grpcbreaker) share: a registry that counts what is
// reported on its breakers' promises, a context whose deadline passes
// when the test says so, and the client and server recovery scenario,
// with its measures and its goal. A transport's test adds only its wire:
// a server on 127.0.0.1, a client, and how a call is made.
//
// It is for tests only, and imports testing and testify.
package transporttest
