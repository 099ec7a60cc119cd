package figures

import (
	"testing"
	"time"
)

func TestSustainedFrom(t *testing.T) {
	offered := func(c [2]int) int { return c[0] }
	mostlyDropped := func(c [2]int) bool { return Pct(c[1], c[0]) >= 90 }
	for _, tc := range []struct {
		name  string
		slots [][2]int // offered, dropped
		want  time.Duration
		found bool
	}{
		{"never", [][2]int{{10, 0}, {10, 9}, {10, 0}, {10, 9}}, 0, false},
		{"from the first", [][2]int{{10, 9}, {10, 10}, {10, 9}}, Slot, true},
		{"after one miss", [][2]int{{10, 9}, {10, 0}, {10, 9}, {10, 9}, {10, 10}}, 3 * Slot, true},
		{"empty slots skipped", [][2]int{{10, 9}, {0, 0}, {10, 9}, {0, 0}, {10, 9}}, Slot, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := SustainedFrom(tc.slots, offered, mostlyDropped)
			if found != tc.found || got != tc.want {
				t.Errorf("SustainedFrom = %v, %v; want %v, %v", got, found, tc.want, tc.found)
			}
		})
	}
}

func TestPct(t *testing.T) {
	if got := Pct(3, 0); got != 0 {
		t.Errorf("Pct(3, 0) = %v, want 0", got)
	}
	if got := Pct(1, 4); got != 25 {
		t.Errorf("Pct(1, 4) = %v, want 25", got)
	}
}
