// Package figures holds the arithmetic that the peer module's wall-clock
// commands (cmd/realtime, cmd/hang) share with the simulator's report: the
// 100 ms slots a run is counted in, and when a share is reached and held.
package figures

import "time"

// Slot is the resolution of the timings, as in the simulator.
const Slot = 100 * time.Millisecond

// SustainedSlots is how many slots in a row a share must hold for the
// timings to count it reached, as in the simulator.
const SustainedSlots = 3

// SustainedFrom returns the time from the start of a phase, whose slots are
// slots, to the end of the first of them from which ok holds for
// SustainedSlots slots with calls in a row, and whether there was one;
// offered says how many calls a slot held, and slots without calls are
// skipped.
func SustainedFrom[C any](slots []C, offered func(C) int, ok func(C) bool) (time.Duration, bool) {
	first, run := 0, 0
	for i, c := range slots {
		if offered(c) == 0 {
			continue
		}
		if !ok(c) {
			run = 0
			continue
		}
		if run == 0 {
			first = i
		}
		run++
		if run == SustainedSlots {
			return time.Duration(first+1) * Slot, true
		}
	}
	return 0, false
}

// Pct returns part as a percentage of whole, 0 when whole is 0.
func Pct(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
