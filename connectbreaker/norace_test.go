//go:build !race

package connectbreaker_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
