package rollingwindow_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

var sinkInt int64

func BenchmarkWindow_Add(b *testing.B) {
	b.Run("int64", func(b *testing.B) {
		w, _ := rollingwindow.New[int64](40, 250*time.Millisecond)
		b.ReportAllocs()
		for range b.N {
			w.Add(1)
		}
	})
	b.Run("float64", func(b *testing.B) {
		w, _ := rollingwindow.New[float64](40, 250*time.Millisecond)
		b.ReportAllocs()
		for range b.N {
			w.Add(1)
		}
	})
}

func BenchmarkWindow_Totals(b *testing.B) {
	for _, size := range []int{10, 40, 400} {
		b.Run(fmt.Sprintf("%dbuckets", size), func(b *testing.B) {
			w, _ := rollingwindow.New[int64](size, 10*time.Second/time.Duration(size))
			w.Add(1)
			b.ReportAllocs()
			for range b.N {
				s, c := w.Totals()
				sinkInt += s + c
			}
		})
	}
}

func BenchmarkWindow_AddParallel(b *testing.B) {
	w, _ := rollingwindow.New[int64](40, 250*time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Add(1)
		}
	})
	_, sinkInt = w.Totals()
}

// BenchmarkWindow_AddClockEvery is BenchmarkWindow_Add reading the clock on
// one add in 16 of a busy bucket (WithClockEvery).
func BenchmarkWindow_AddClockEvery(b *testing.B) {
	w, _ := rollingwindow.New[int64](40, 250*time.Millisecond, rollingwindow.WithClockEvery(16))
	b.ReportAllocs()
	for range b.N {
		w.Add(1)
	}
}

// BenchmarkWindow_AddClockEveryParallel is BenchmarkWindow_AddParallel
// reading the clock on one add in 16 of a busy bucket: the window spreads
// over a lane per processor.
func BenchmarkWindow_AddClockEveryParallel(b *testing.B) {
	w, _ := rollingwindow.New[int64](40, 250*time.Millisecond, rollingwindow.WithClockEvery(16))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Add(1)
		}
	})
	_, sinkInt = w.Totals()
}

// BenchmarkLane_AddParallel adds to a lane per goroutine, joined to one
// window with AddLane: what a caller that stripes its own writers pays.
func BenchmarkLane_AddParallel(b *testing.B) {
	w, _ := rollingwindow.New[int64](40, 250*time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		l := new(rollingwindow.Lane[int64])
		if err := w.AddLane(l); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			l.Add(1)
		}
	})
	_, sinkInt = w.Totals()
}
