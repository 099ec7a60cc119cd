//go:build !race

package breaker

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = false
