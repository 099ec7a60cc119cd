package adder

import (
	"sync/atomic"
	"testing"
)

func BenchmarkAdder_Add(b *testing.B) {
	var a Adder
	b.ReportAllocs()
	for range b.N {
		a.Add(1)
	}
}

func BenchmarkAdder_AddParallel(b *testing.B) {
	var a Adder
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.Add(1)
		}
	})
}

// BenchmarkAtomic_AddParallel is the single shared word an Adder replaces.
func BenchmarkAtomic_AddParallel(b *testing.B) {
	var n atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Add(1)
		}
	})
}

// BenchmarkAtomic_Add is one uncontended atomic add, the floor for Add.
func BenchmarkAtomic_Add(b *testing.B) {
	var n atomic.Uint64
	b.ReportAllocs()
	for range b.N {
		n.Add(1)
	}
}

func BenchmarkAdder_AddSpread(b *testing.B) {
	var a Adder
	a.spread()
	b.ReportAllocs()
	for range b.N {
		a.Add(1)
	}
}
