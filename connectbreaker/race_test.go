//go:build race

package connectbreaker_test

// raceEnabled: the tests run under the race detector, which makes the
// recovery scenario's 150,000 calls several times slower.
const raceEnabled = true
