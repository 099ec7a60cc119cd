package serverside

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/criticality"
)

// simSteady runs sv at multiple × its capacity for 2 s, then measures
// measure at the same rate, as bench/cmd/overload's steady rows do.
func simSteady(sv simServer, multiple float64, measure time.Duration, seed uint64, bursts bool) simPhaseResult {
	warm := simPhase{length: 2 * time.Second, multiple: multiple}
	if bursts {
		warm.burstLength, warm.burstMultiple = 200*time.Millisecond, 3
	}
	measured := warm
	measured.length = measure
	res, _ := simulate(sv, []simPhase{warm, measured}, seed)
	return res[1]
}

// TestSimulated_overloadGoals holds the limit to the overload goals
// (docs/guide/overload.md) on the simulated server, for each shape of
// handlers at the defaults, over several seeds: no rejection at 0.5× and
// 0.9× of capacity (heavy-tailed service and bursts of 3× too); at 2× and
// 4×, 97 % of capacity served, a p99 within twice the unloaded one,
// CRITICAL_PLUS served whole (99.5 %) and the levels in strict order, no
// work for callers gone. What it leaves out is the machine: a real run's
// holds overrun S under load (bench/cmd/overload).
func TestSimulated_overloadGoals(t *testing.T) {
	type shape struct {
		sv      simServer
		seeds   uint64
		measure time.Duration
		// For 2 handlers × 200 ms, 10 calls a second, the goals at 2×
		// are missed at some seeds: served is 96–102 % (the calls let in
		// before the overload is told, at 20 calls a second against 10,
		// hold the handlers as the measure begins), and at one seed of
		// eight 2 calls are served after their callers left; bursts of
		// 3× at 0.9× fill the queue past a second of wait at some seeds,
		// where no limit loses more calls to their callers' timeout.
		minServed2x float64
		maxGone2x   int
		bursts      bool
	}
	shapes := []shape{
		{sv: simServer{w: 4, s: 20 * time.Millisecond}, seeds: 4, measure: 10 * time.Second, minServed2x: 0.97, bursts: true},
		{sv: simServer{w: 32, s: 5 * time.Millisecond}, seeds: 1, measure: 4 * time.Second, minServed2x: 0.97, bursts: true},
		{sv: simServer{w: 2, s: 200 * time.Millisecond}, seeds: 8, measure: 10 * time.Second, minServed2x: 0.96, maxGone2x: 2},
		{sv: simServer{w: 4, s: 20 * time.Millisecond, heavy: true}, seeds: 4, measure: 10 * time.Second},
	}
	for _, sh := range shapes {
		name := fmt.Sprintf("%d×%v", sh.sv.w, sh.sv.s)
		if sh.sv.heavy {
			name += ",heavy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The unloaded p99 of all seeds' calls at 0.5×: one seed's
			// holds few calls of slow handlers (50 of 2 × 200 ms).
			var unloaded simPhaseResult
			for seed := uint64(1); seed <= sh.seeds; seed++ {
				r := simSteady(sh.sv, 0.5, sh.measure, seed, false)
				assert.Zero(t, r.rejected, "0.5×, seed %d", seed)
				unloaded.latencies = append(unloaded.latencies, r.latencies...)
			}
			bound := 2 * unloaded.p99()
			for seed := uint64(1); seed <= sh.seeds; seed++ {
				r := simSteady(sh.sv, 0.9, sh.measure, seed, false)
				assert.Zero(t, r.rejected, "0.9×, seed %d", seed)
				if sh.bursts {
					r = simSteady(sh.sv, 0.9, sh.measure, seed, true)
					assert.Zero(t, r.rejected, "0.9× with bursts, seed %d", seed)
				}
				if sh.sv.heavy {
					// The goals past capacity are the constant service's; a
					// heavy tail's work varies by a tenth from seed to seed,
					// and the limit's noLoad is rough: it serves 95–108 % of
					// the nominal capacity over eight seeds at 2× and 4×, and
					// collapsed to a third before its cap held (see adjust).
					for _, m := range []float64{2, 4} {
						r := simSteady(sh.sv, m, sh.measure, seed, false)
						assert.GreaterOrEqual(t, r.share(), 0.9, "heavy-tailed, %v×, seed %d: %v", m, seed, r)
					}
					continue
				}
				for _, m := range []float64{2, 4} {
					r := simSteady(sh.sv, m, sh.measure, seed, false)
					least, gone := 0.97, 0
					if m == 2 {
						least, gone = sh.minServed2x, sh.maxGone2x
					}
					assert.GreaterOrEqual(t, r.share(), least, "%v×, seed %d: %v", m, seed, r)
					assert.LessOrEqual(t, r.p99(), bound, "%v×, seed %d: p99 within twice the unloaded", m, seed)
					assert.GreaterOrEqual(t, r.levelShare(criticality.CriticalPlus), 0.995, "%v×, seed %d: %v", m, seed, r)
					for l := criticality.Sheddable; l < criticality.CriticalPlus; l++ {
						assert.LessOrEqual(t, r.levelShare(l), r.levelShare(l+1), "%v×, seed %d: %v served less than %v", m, seed, l+1, l)
					}
					assert.LessOrEqual(t, r.gone, gone, "%v×, seed %d: work for callers gone", m, seed)
				}
			}
		})
	}
}

// simSlot is the step by which the transitions are timed, as
// bench/cmd/overload times them.
const simSlot = 100 * time.Millisecond

// p99Window returns the calls of r served in the 500 ms to end, or the
// last 100 served by end when those are fewer, as bench/cmd/overload
// reads a p99: the nearest-rank p99 of fewer than 100 calls is their
// slowest.
func p99Window(r simPhaseResult, end time.Duration) simPhaseResult {
	type served struct{ at, latency time.Duration }
	var by []served
	for j, at := range r.servedAt {
		if at <= end {
			by = append(by, served{at, r.latencies[j]})
		}
	}
	slices.SortStableFunc(by, func(a, b served) int { return cmp.Compare(a.at, b.at) })
	lo := len(by)
	for lo > 0 && by[lo-1].at > end-500*time.Millisecond {
		lo--
	}
	lo = min(lo, max(0, len(by)-100))
	var w simPhaseResult
	for _, s := range by[lo:] {
		w.latencies = append(w.latencies, s.latency)
	}
	return w
}

// settled is when the last bad slot of bad ends; false if the last slot
// is bad.
func settled(bad []bool) (time.Duration, bool) {
	last := -1
	for i, b := range bad {
		if b {
			last = i
		}
	}
	return time.Duration(last+1) * simSlot, last < len(bad)-1
}

// TestSimulated_overloadTransitions holds the limit to the goals of the
// overload's transitions on the simulated server, 4 handlers × 20 ms at
// the defaults, over several seeds: a step from 1× to 4× has the rolling
// p99 of served calls (500 ms, or the last 100 calls when it holds fewer:
// see p99Window) back within twice the unloaded p99 in 2 s; a step from 4× to 0.5× stops rejecting in 1 s; handlers that slow
// to half their capacity at 1.5× serve 95 % of the new capacity (over
// the last second) in 2 s.
func TestSimulated_overloadTransitions(t *testing.T) {
	sv := simServer{w: 4, s: 20 * time.Millisecond}
	const seeds, half, step = 4, 5 * time.Second, 10 * time.Second
	var unloaded simPhaseResult
	for seed := uint64(1); seed <= seeds; seed++ {
		r := simSteady(sv, 0.5, step, seed, false)
		unloaded.latencies = append(unloaded.latencies, r.latencies...)
	}
	bound := 2 * unloaded.p99()
	slots := int(step / simSlot)
	for seed := uint64(1); seed <= seeds; seed++ {
		res, _ := simulate(sv, []simPhase{{length: half, multiple: 1}, {length: step, multiple: 4}}, seed)
		r := res[1]
		bad := make([]bool, slots)
		for i := range bad {
			w := p99Window(r, time.Duration(i+1)*simSlot)
			bad[i] = len(w.latencies) == 0 || w.p99() > bound
		}
		d, ok := settled(bad)
		t.Logf("seed %d: 1× → 4×, p99 within %v after %v", seed, bound, d)
		assert.True(t, ok && d <= 2*time.Second, "1× → 4×, seed %d: p99 back within %v after %v (settled %v)", seed, bound, d, ok)

		res, _ = simulate(sv, []simPhase{{length: half, multiple: 4}, {length: step, multiple: 0.5}}, seed)
		bad = make([]bool, slots)
		for _, at := range res[1].rejectedAt {
			bad[min(int(at/simSlot), slots-1)] = true
		}
		d, ok = settled(bad)
		t.Logf("seed %d: 4× → 0.5×, rejections stop after %v", seed, d)
		assert.True(t, ok && d <= time.Second, "4× → 0.5×, seed %d: rejections stop after %v (settled %v)", seed, d, ok)

		res, _ = simulate(sv, []simPhase{{length: half, multiple: 1.5}, {length: step, multiple: 1.5, scale: 2}}, seed)
		r = res[1]
		bad = make([]bool, slots)
		for i := range bad {
			end := time.Duration(i+1) * simSlot
			begin := max(0, end-time.Second)
			k := 0
			for _, at := range r.servedAt {
				if at > begin && at <= end {
					k++
				}
			}
			bad[i] = float64(k) < 0.95*r.capacity*(end-begin).Seconds()
		}
		d, ok = settled(bad)
		t.Logf("seed %d: capacity halved, 95 %% of it served after %v", seed, d)
		assert.True(t, ok && d <= 2*time.Second, "capacity halved, seed %d: 95 %% of it served after %v (settled %v)", seed, d, ok)
	}
}

// TestSimulated_slowHandlers: handlers slower than a second (8 × 2 s,
// callers that wait 30 s) are turned away nothing below capacity. The
// queue held a second's wait at the limit's calls a noLoad, under one
// call for a limit of 2 past the start, and turned away calls at 0.5×.
func TestSimulated_slowHandlers(t *testing.T) {
	sv := simServer{w: 8, s: 2 * time.Second, timeout: 30 * time.Second}
	for seed := uint64(1); seed <= 4; seed++ {
		for _, m := range []float64{0.5, 0.9} {
			r := simSteady(sv, m, 20*time.Second, seed, false)
			assert.Zero(t, r.rejected, "%v×, seed %d: %v", m, seed, r)
			assert.Zero(t, r.timedOut, "%v×, seed %d: %v", m, seed, r)
		}
	}
}

// TestSimulated_aSharedCPU: 32 handlers × 5 ms on a machine that slows
// every hold by 5 % on average, more in slow moments of 20 ms, and by up
// to 10 % more as the slots fill (a CPU shared with the load, as in
// bench/cmd/overload's in-process rows). Started at twice the capacity,
// then at four times it, the limit serves 92 % or more of what the slowed
// handlers can at four times, at every seed: noLoad read as the lowest of
// many readings, a fast moment's, had the gradient take the slowdown for
// a queue inside and hold the limit below the slots (88 % at one seed).
func TestSimulated_aSharedCPU(t *testing.T) {
	sv := simServer{w: 32, s: 5 * time.Millisecond, contention: 0.1, jitter: 0.05}
	slowed := sv.capacity() / (1 + sv.contention) / (1 + sv.jitter)
	for seed := uint64(1); seed <= 4; seed++ {
		res, _ := simulate(sv, []simPhase{{length: 5 * time.Second, multiple: 2}, {length: 5 * time.Second, multiple: 4}}, seed)
		r := res[1]
		served := float64(r.served) / (slowed * r.length.Seconds())
		assert.GreaterOrEqual(t, served, 0.92, "seed %d: %v", seed, r)
	}
}

// TestSimulated_aStartReadLow: the shared CPU of TestSimulated_aSharedCPU,
// started at twice its capacity. At one seed of four the start ends on a
// slow moment and reads a fifth of the handlers' capacity; at others it
// reads noLoad from its few calls at once, below what the handlers take
// with every slot busy, and the gradient holds the limit under their
// slots. The limit climbed back in 2 to 7 s (37 % of the slowed capacity
// served in the second and third seconds at seed 3) until probes up
// (Limiter.endProbeUp) tried whether the handlers serve more: they
// serve 90 % or more from the second second, at every seed.
func TestSimulated_aStartReadLow(t *testing.T) {
	sv := simServer{w: 32, s: 5 * time.Millisecond, contention: 0.1, jitter: 0.05}
	slowed := sv.capacity() / (1 + sv.contention) / (1 + sv.jitter)
	for seed := uint64(1); seed <= 4; seed++ {
		res, _ := simulate(sv, []simPhase{{length: time.Second, multiple: 2}, {length: 2 * time.Second, multiple: 2}}, seed)
		r := res[1]
		served := float64(r.served) / (slowed * r.length.Seconds())
		assert.GreaterOrEqual(t, served, 0.9, "seed %d: %v", seed, r)
	}
}
