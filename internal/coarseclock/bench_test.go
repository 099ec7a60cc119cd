package coarseclock

import (
	"testing"
	"time"
)

var sink time.Duration

func BenchmarkNow(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		sink += Now()
	}
}

func BenchmarkNowParallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var s time.Duration
		for pb.Next() {
			s += Now()
		}
		_ = s
	})
}

// BenchmarkTimeSince is the system clock read that Now replaces.
func BenchmarkTimeSince(b *testing.B) {
	start := time.Now()
	b.ReportAllocs()
	for range b.N {
		sink += time.Since(start)
	}
}
