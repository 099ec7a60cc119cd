package bench

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"
	gozero "github.com/zeromicro/go-zero/core/breaker"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/tuning"
)

// Package-level sinks keep the compiler from discarding results.
var (
	sinkErr error
	sinkAny any
)

func ok() error { return nil }

// lib names a sub-benchmark for one library.
func lib(name string) string { return "lib=" + name }

// failIfRejected stops a benchmark whose healthy breaker dropped calls: its
// figures would not be those of the healthy path.
func failIfRejected(b *testing.B, rejected int64) {
	b.Helper()
	if rejected > 0 {
		b.Fatalf("a healthy breaker rejected %d of %d calls", rejected, b.N)
	}
}

// BenchmarkAllowAccept is the healthy path through each library's two-step
// API: ask for a call, then report it a success.
func BenchmarkAllowAccept(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) {
		br := oursHealthy()
		var rejected int64
		b.ReportAllocs()
		for range b.N {
			if p, err := br.Allow(); err == nil {
				p.Accept()
			} else {
				rejected++
			}
		}
		failIfRejected(b, rejected)
	})
	b.Run(lib(libFailsafeAdaptive), func(b *testing.B) {
		t := failsafeAdaptiveHealthy()
		var rejected int64
		b.ReportAllocs()
		for range b.N {
			if t.TryAcquirePermit() {
				t.RecordSuccess()
			} else {
				rejected++
			}
		}
		failIfRejected(b, rejected)
	})
	b.Run(lib(libFailsafeClassic), func(b *testing.B) {
		cb := failsafeClassicHealthy()
		var rejected int64
		b.ReportAllocs()
		for range b.N {
			if cb.TryAcquirePermit() {
				cb.RecordSuccess()
			} else {
				rejected++
			}
		}
		failIfRejected(b, rejected)
	})
	b.Run(lib(libGobreaker), func(b *testing.B) {
		cb := gobreakerHealthy()
		var rejected int64
		b.ReportAllocs()
		for range b.N {
			if done, err := cb.Allow(); err == nil {
				done(nil)
			} else {
				rejected++
			}
		}
		failIfRejected(b, rejected)
	})
	b.Run(lib(libGoZero), func(b *testing.B) {
		br := goZeroHealthy()
		var rejected int64
		b.ReportAllocs()
		for range b.N {
			if p, err := br.Allow(); err == nil {
				p.Accept()
			} else {
				rejected++
			}
		}
		failIfRejected(b, rejected)
	})
	b.Run(lib(libAegis), func(b *testing.B) {
		cb := aegisHealthy()
		var rejected int64
		b.ReportAllocs()
		for range b.N {
			if cb.Allow() == nil {
				cb.MarkSuccess()
			} else {
				rejected++
			}
		}
		failIfRejected(b, rejected)
	})
}

// reportAdmitted reports the share of calls in a Drop benchmark that were
// admitted after all (and reported failures), so that a reader can see that
// the figure is that of dropped calls.
func reportAdmitted(b *testing.B, admitted int64) {
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/op")
}

// BenchmarkDrop is the cost of a call the breaker rejects: the breaker is
// first driven into shedding (the adaptive ones) or open (the classic ones),
// see the constructors in libs_test.go. The adaptive breakers drop with a
// probability close to but below 1; a call they admit is reported a failure,
// as a caller would, and counted in admitted/op.
func BenchmarkDrop(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) {
		br := oursShedding()
		checkOursDropError(b, br)
		var admitted int64
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			p, err := br.Allow()
			if err == nil {
				p.Reject(errDown.Error())
				admitted++
			}
			sinkErr = err
		}
		reportAdmitted(b, admitted)
	})
	b.Run(lib(libFailsafeAdaptive), func(b *testing.B) {
		t := failsafeAdaptiveShedding()
		var admitted int64
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if t.TryAcquirePermit() {
				t.RecordFailure()
				admitted++
			}
		}
		reportAdmitted(b, admitted)
	})
	b.Run(lib(libFailsafeClassic), func(b *testing.B) {
		cb := failsafeClassicOpen()
		var admitted int64
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if cb.TryAcquirePermit() {
				cb.RecordFailure()
				admitted++
			}
		}
		reportAdmitted(b, admitted)
	})
	b.Run(lib(libGobreaker), func(b *testing.B) {
		cb := gobreakerOpen()
		var admitted int64
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			done, err := cb.Allow()
			if err == nil {
				done(errDown)
				admitted++
			}
			sinkErr = err
		}
		reportAdmitted(b, admitted)
	})
	b.Run(lib(libGoZero), func(b *testing.B) {
		br := goZeroShedding()
		var admitted int64
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			p, err := br.Allow()
			if err == nil {
				p.Reject(errDown.Error())
				admitted++
			}
			sinkErr = err
		}
		reportAdmitted(b, admitted)
	})
	b.Run(lib(libAegis), func(b *testing.B) {
		cb := aegisShedding()
		var admitted int64
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			err := cb.Allow()
			if err == nil {
				cb.MarkFailed()
				admitted++
			}
			sinkErr = err
		}
		reportAdmitted(b, admitted)
	})
}

// checkOursDropError fails b unless a dropped call's error matches
// ErrServiceUnavailable and quotes the failure reason: the benchmark is to
// measure a drop that says why.
func checkOursDropError(b testing.TB, br breaker.Breaker) {
	b.Helper()
	for range 1000 {
		p, err := br.Allow()
		if err == nil {
			p.Reject(errDown.Error())
			continue
		}
		if !errors.Is(err, breaker.ErrServiceUnavailable) {
			b.Fatalf("drop error %v does not match ErrServiceUnavailable", err)
		}
		if want := strconv.Quote(errDown.Error()); !strings.Contains(err.Error(), want) {
			b.Fatalf("drop error %q does not quote the failure reason %s", err, want)
		}
		return
	}
	b.Fatal("the shedding breaker admitted 1000 calls in a row")
}

// BenchmarkDo is each library's one-step API running a function that
// returns nil. aegis has none.
func BenchmarkDo(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) {
		br := oursHealthy()
		b.ReportAllocs()
		for range b.N {
			sinkErr = br.Do(ok)
		}
	})
	b.Run(lib(libFailsafeAdaptive), func(b *testing.B) {
		exec := failsafe.With[any](failsafeAdaptiveHealthy())
		b.ReportAllocs()
		for range b.N {
			sinkErr = exec.Run(ok)
		}
	})
	b.Run(lib(libFailsafeClassic), func(b *testing.B) {
		exec := failsafe.With[any](failsafeClassicHealthy())
		b.ReportAllocs()
		for range b.N {
			sinkErr = exec.Run(ok)
		}
	})
	b.Run(lib(libGobreaker), func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
		req := func() (struct{}, error) { return struct{}{}, nil }
		b.ReportAllocs()
		for range b.N {
			_, sinkErr = cb.Execute(req)
		}
	})
	b.Run(lib(libGoZero), func(b *testing.B) {
		br := goZeroHealthy()
		b.ReportAllocs()
		for range b.N {
			sinkErr = br.Do(ok)
		}
	})
}

// runParallel runs allowAccept under b.RunParallel and fails b if any call
// was rejected. allowAccept makes one call and reports whether it was
// admitted.
func runParallel(b *testing.B, allowAccept func() bool) {
	var rejected atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var n int64
		for pb.Next() {
			if !allowAccept() {
				n++
			}
		}
		rejected.Add(n)
	})
	failIfRejected(b, rejected.Load())
}

// BenchmarkParallel is BenchmarkAllowAccept from all of GOMAXPROCS
// goroutines at once, on one breaker; run it with -cpu 1,2,8. The
// per-library step is a closure, the same extra indirect call for all.
func BenchmarkParallel(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) {
		br := oursHealthy()
		runParallel(b, func() bool {
			p, err := br.Allow()
			if err != nil {
				return false
			}
			p.Accept()
			return true
		})
	})
	b.Run(lib(libFailsafeAdaptive), func(b *testing.B) {
		t := failsafeAdaptiveHealthy()
		runParallel(b, func() bool {
			if !t.TryAcquirePermit() {
				return false
			}
			t.RecordSuccess()
			return true
		})
	})
	b.Run(lib(libFailsafeClassic), func(b *testing.B) {
		cb := failsafeClassicHealthy()
		runParallel(b, func() bool {
			if !cb.TryAcquirePermit() {
				return false
			}
			cb.RecordSuccess()
			return true
		})
	})
	b.Run(lib(libGobreaker), func(b *testing.B) {
		cb := gobreakerHealthy()
		runParallel(b, func() bool {
			done, err := cb.Allow()
			if err != nil {
				return false
			}
			done(nil)
			return true
		})
	})
	b.Run(lib(libGoZero), func(b *testing.B) {
		br := goZeroHealthy()
		runParallel(b, func() bool {
			p, err := br.Allow()
			if err != nil {
				return false
			}
			p.Accept()
			return true
		})
	})
	b.Run(lib(libAegis), func(b *testing.B) {
		cb := aegisHealthy()
		runParallel(b, func() bool {
			if cb.Allow() != nil {
				return false
			}
			cb.MarkSuccess()
			return true
		})
	})
}

// heapPerInstance is the heap that n instances made by newFn keep alive,
// per instance, in bytes: the live heap after a collection, with and
// without them. Transient garbage of the constructor is not counted; the
// B/op of the same benchmark counts it.
func heapPerInstance[T any](newFn func() T) float64 {
	const n = 1000
	keep := make([]T, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = newFn()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
}

// benchNew measures newFn: B/op and allocs/op of one construction, and
// B/breaker, the heap one instance keeps.
func benchNew[T any](b *testing.B, newFn func() T) {
	b.ReportAllocs()
	for range b.N {
		sinkAny = newFn()
	}
	b.StopTimer()
	sinkAny = nil
	b.ReportMetric(heapPerInstance(newFn), "B/breaker")
}

// BenchmarkNew creates a breaker at the library's defaults. gobreaker's is
// the one-step CircuitBreaker (the two-step one wraps it in one more
// pointer).
func BenchmarkNew(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) { benchNew(b, oursHealthy) })
	b.Run(lib(libFailsafeAdaptive), func(b *testing.B) {
		benchNew(b, adaptivethrottler.NewWithDefaults[any])
	})
	b.Run(lib(libFailsafeClassic), func(b *testing.B) {
		benchNew(b, circuitbreaker.NewWithDefaults[any])
	})
	b.Run(lib(libGobreaker), func(b *testing.B) {
		benchNew(b, func() *gobreaker.CircuitBreaker[struct{}] {
			return gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
		})
	})
	b.Run(lib(libGoZero), func(b *testing.B) { benchNew(b, goZeroHealthy) })
	b.Run(lib(libAegis), func(b *testing.B) { benchNew(b, aegisHealthy) })
}

// registryName is the name looked up in the registry benchmarks.
const registryName = "bench-registry"

// BenchmarkRegistryGet looks up an existing name: ours in a
// breaker.Registry, go-zero in its package-level registry (GetBreaker). The
// other libraries have no registry.
func BenchmarkRegistryGet(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) {
		r := breaker.MustNewRegistry()
		r.Get(registryName)
		b.ReportAllocs()
		for range b.N {
			sinkAny = r.Get(registryName)
		}
	})
	b.Run(lib(libGoZero), func(b *testing.B) {
		gozero.GetBreaker(registryName)
		b.ReportAllocs()
		for range b.N {
			sinkAny = gozero.GetBreaker(registryName)
		}
	})
}

// BenchmarkRegistryGetParallel is BenchmarkRegistryGet from all of
// GOMAXPROCS goroutines at once; run it with -cpu 1,2,8.
func BenchmarkRegistryGetParallel(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) {
		r := breaker.MustNewRegistry()
		r.Get(registryName)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var br breaker.Breaker
			for pb.Next() {
				br = r.Get(registryName)
			}
			runtime.KeepAlive(br)
		})
	})
	b.Run(lib(libGoZero), func(b *testing.B) {
		gozero.GetBreaker(registryName)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var br gozero.Breaker
			for pb.Next() {
				br = gozero.GetBreaker(registryName)
			}
			runtime.KeepAlive(br)
		})
	})
}

// BenchmarkCriticality is ours alone: BenchmarkAllowAccept for a call whose
// context carries a criticality other than the default (AllowCtx), the
// cost of asking at a level.
func BenchmarkCriticality(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) {
		br := oursHealthy()
		ctx := criticality.With(context.Background(), criticality.Sheddable)
		var rejected int64
		b.ReportAllocs()
		for range b.N {
			if p, err := br.AllowCtx(ctx); err == nil {
				p.Accept()
			} else {
				rejected++
			}
		}
		failIfRejected(b, rejected)
	})
}

// BenchmarkBuckets is ours alone: Allow and Accept on the healthy path with
// the window split into 10, 20 (the default) and 400 buckets.
func BenchmarkBuckets(b *testing.B) {
	b.Run(lib(libOurs), func(b *testing.B) {
		for _, n := range []int{10, tuning.DefaultBuckets, 400} {
			b.Run("buckets="+strconv.Itoa(n), func(b *testing.B) {
				br := breaker.MustNew(tuning.Option(tuning.Buckets(n)).(breaker.Option))
				var rejected int64
				b.ReportAllocs()
				for range b.N {
					if p, err := br.Allow(); err == nil {
						p.Accept()
					} else {
						rejected++
					}
				}
				failIfRejected(b, rejected)
			})
		}
	})
}
