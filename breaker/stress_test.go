//go:build stress

// The tests in this file run hostile input and load at scale, print what
// they measure and fail past the bounds stated in them; make stress runs
// them (docs/design/reliability.md quotes their figures). They are left out of
// make test for their time and memory.

package breaker_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// liveHeap returns the bytes of the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// allocated returns the bytes allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

const mib = 1 << 20

// dropCost returns the time and bytes a dropped call costs on b, its error
// text included, over n drops.
func dropCost(t *testing.T, b breaker.Breaker, n int) (time.Duration, float64) {
	t.Helper()
	before, start := allocated(), time.Now()
	dropped := 0
	for range n {
		if _, err := b.Allow(); err != nil {
			dropped++
			_ = err.Error()
		}
	}
	elapsed := time.Since(start)
	require.Greater(t, dropped, n/2, "the breaker sheds")
	return elapsed / time.Duration(dropped), float64(allocated()-before) / float64(dropped)
}

func TestStress_hugeReasons(t *testing.T) {
	const reasons, size = 50, 1 << 20
	base := liveHeap()
	huge, _ := newBreaker(t, breaker.WithK(1), breaker.WithProtection(0))
	for i := range reasons {
		p, err := huge.Allow()
		if err == nil {
			p.Reject(strings.Repeat(string(rune('a'+i%26)), size)) // 1 MiB, freed once recorded
		}
	}
	kept := liveHeap() - base
	tiny, _ := newBreaker(t, breaker.WithK(1), breaker.WithProtection(0))
	fail(t, tiny, reasons, "x")

	hugeTime, hugeBytes := dropCost(t, huge, 100_000)
	tinyTime, tinyBytes := dropCost(t, tiny, 100_000)
	t.Logf("%d reasons of 1 MiB: %d KiB kept; a drop with its error text: %v and %.0f B (%v and %.0f B with 1-byte reasons)",
		reasons, kept/1024, hugeTime, hugeBytes, tinyTime, tinyBytes)
	assert.Less(t, kept, int64(256<<10), "bound: 256 KiB kept for 50 MiB of reasons")
	assert.Less(t, hugeTime, 20*time.Microsecond, "bound: 20 µs per drop")
	assert.Less(t, hugeBytes, 2048.0, "bound: 2 KiB allocated per drop")
	assert.Less(t, hugeTime, 3*tinyTime+time.Microsecond, "bound: a drop costs about the same whatever the reasons hold")
	runtime.KeepAlive(huge)
}

func TestStress_churnAgainstSetLimit(t *testing.T) {
	const limit, ticks, perTick = 1_000, 1_000, 200 // 200,000 new names, 200 per 5 ms
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	r.SetLimit(limit)
	alone := breaker.MustNew(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	base := liveHeap()
	hot := r.Get("hot")
	replaced, admitted, aloneAdmitted, calls := 0, 0, 0, 0
	var inGet time.Duration
	for i := range ticks {
		start := time.Now()
		for j := range perTick {
			r.Get(fmt.Sprint("churn-", i, "-", j))
		}
		inGet += time.Since(start)
		for range 5 {
			b := r.Get("hot")
			if b != hot {
				replaced, hot = replaced+1, b
			}
			if p, err := b.Allow(); err == nil {
				p.Accept()
			}
		}
		p, err := r.Get("dead").Allow()
		if err == nil {
			p.Reject("connection refused")
		}
		pa, errAlone := alone.Allow()
		if errAlone == nil {
			pa.Reject("connection refused")
		}
		if i >= 200 { // after the first second
			calls++
			if err == nil {
				admitted++
			}
			if errAlone == nil {
				aloneAdmitted++
			}
		}
		m.Add(5 * time.Millisecond)
	}
	kept := len(names(r))
	heap := liveHeap() - base
	t.Logf("%d new names against a limit of %d: %v per new name, %d kept, %.1f MiB in use; "+
		"hot breaker replaced %d times; dead dependency admitted %.2f%% (%.2f%% by a breaker alone)",
		ticks*perTick, limit, inGet/time.Duration(ticks*perTick), kept, float64(heap)/mib,
		replaced, 100*float64(admitted)/float64(calls), 100*float64(aloneAdmitted)/float64(calls))
	assert.Equal(t, 0, replaced, "bound: the hot breaker is never replaced")
	assert.InDelta(t, float64(aloneAdmitted)/float64(calls), float64(admitted)/float64(calls), 0.005,
		"bound: the dead dependency is shed as by a breaker alone")
	assert.LessOrEqual(t, kept, limit)
	assert.Less(t, heap, int64(8*mib), "bound: 8 MiB for 1,000 breakers")
	assert.Less(t, inGet/time.Duration(ticks*perTick), 20*time.Microsecond, "bound: 20 µs per new name")
	runtime.KeepAlive(r)
}

func TestStress_defaultLimit(t *testing.T) {
	const n = 100_000
	var r breaker.Registry
	base := liveHeap()
	start := time.Now()
	for i := range n {
		r.Get(fmt.Sprint("host-", i, ".example"))
	}
	elapsed := time.Since(start)
	heap := liveHeap() - base
	kept := len(names(&r))
	t.Logf("%d names in a registry with the default limit (%d): %v per name, %d kept, %.1f MiB in use",
		n, breaker.DefaultLimit, elapsed/n, kept, float64(heap)/mib)
	assert.LessOrEqual(t, kept, breaker.DefaultLimit)
	assert.Less(t, heap, int64(32*mib), "bound: 32 MiB for the default limit")
	runtime.KeepAlive(&r)
}

func TestStress_10000Goroutines(t *testing.T) {
	const goroutines, calls = 10_000, 1_000
	b := breaker.MustNew()
	r := breaker.MustNewRegistry()
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprint("dep-", g%100)
			for range calls {
				_ = b.Do(func() error { return nil })
				p, err := r.Get(name).Allow()
				if err == nil {
					p.Accept()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	s := b.Stats()
	var viaRegistry int64
	r.Range(func(_ string, b breaker.Breaker) bool {
		st := b.Stats()
		viaRegistry += st.TotalSuccesses
		return true
	})
	t.Logf("%d goroutines × %d calls on one breaker and through a registry of 100: %v, %.0f calls/s",
		goroutines, calls, elapsed.Round(time.Millisecond), float64(2*goroutines*calls)/elapsed.Seconds())
	assert.Equal(t, int64(goroutines*calls), s.TotalSuccesses, "bound: every call counted, exactly")
	assert.Equal(t, int64(goroutines*calls), viaRegistry, "bound: every call counted, exactly")
	assert.Less(t, elapsed, 2*time.Minute, "bound: 2 minutes")
}
