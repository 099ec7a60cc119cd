// Package leakcheck has no code of its own. Its test uses the core's breakers
// the way a program does, on the system clock, and then asks goleak whether
// any goroutine is left running: the core starts none (no background
// goroutines, nothing to close). It is a module of its own so that goleak
// stays out of the core's go.mod.
package leakcheck
