package rollingwindow_test

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

// stepClock is a clock the fuzzer moves by hand; unlike clock.Mock it does
// not pause on every step.
// stepClock is a clock the fuzzer sets; the window reads Now alone, and
// the embedded clock.Clock, nil, stands for the methods it never calls.
type stepClock struct {
	clock.Clock
	now time.Time
}

func (c *stepClock) Now() time.Time { return c.now }

// entry is one value of the reference model, with the absolute bucket it was
// written to.
type entry struct {
	bucket int64
	value  int64
}

// model is the naive reference: every value ever added, re-summed on each
// read. Its current bucket follows the clock forwards and never backwards.
type model struct {
	start    time.Time
	interval time.Duration
	size     int64
	current  int64
	entries  []entry
}

func (m *model) move(now time.Time) {
	d := now.Sub(m.start)
	if d < time.Duration(m.current+1-m.size)*m.interval || d >= 1<<62 { // back past the window, or centuries ahead: afresh
		m.start, m.current, m.entries = now, 0, nil
		return
	}
	if d >= 0 && int64(d/m.interval) > m.current {
		m.current = int64(d / m.interval)
	}
	// The current bucket moves back only when the window starts afresh.
	kept := m.entries[:0]
	for _, e := range m.entries {
		if e.bucket > m.current-m.size {
			kept = append(kept, e)
		}
	}
	m.entries = kept
}

func (m *model) totals(ignoreCurrent bool) (sum int64, fsum float64, count int64) {
	for _, e := range m.entries {
		if e.bucket <= m.current-m.size || (ignoreCurrent && e.bucket == m.current) {
			continue
		}
		sum += e.value
		fsum += asFloat(e.value)
		count++
	}
	return sum, fsum, count
}

// bucket returns the sum and count of the entries in bucket i.
func (m *model) bucket(i int64) (sum int64, count int64) {
	for _, e := range m.entries {
		if e.bucket == i {
			sum += e.value
			count++
		}
	}
	return sum, count
}

func asFloat(v int64) float64 { return float64(v) / 1024 }

// FuzzWindow applies a fuzzer-chosen sequence of steps (add a value, to the
// window or to one of the lanes joined to it, move the clock forwards a
// little or a lot, step it backwards) to an int64 window, a float64 window
// and the model, and compares their totals after every step. A third
// window, reading the clock once in 3 adds of a busy bucket
// (WithClockEvery), takes the same values and must agree.
func FuzzWindow(f *testing.F) {
	op := func(kind byte, arg uint64) []byte {
		b := []byte{kind}
		return binary.LittleEndian.AppendUint64(b, arg)
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	const add, forward, jump, back, addCurrent, leap, laneAdd = 0, 1, 2, 3, 4, 5, 6
	const kinds, lanes = 7, 3                                                                           // a step's first byte: its kind, then which lane (kind + kinds·lane)
	f.Add(uint8(4), false, cat(op(add, 1), op(forward, 0), op(add, 2)))                                 // zero advance
	f.Add(uint8(4), false, cat(op(add, 1), op(forward, 4), op(add, 2), op(forward, 4)))                 // exactly one bucket (4 quarter-intervals)
	f.Add(uint8(3), true, cat(op(add, 5), op(jump, 1), op(add, 6), op(jump, 1<<40), op(add, 7)))        // jumps longer than the window
	f.Add(uint8(2), false, cat(op(add, math.MaxInt64), op(add, math.MaxInt64), op(forward, 4)))         // large values wrap as int64 does
	f.Add(uint8(5), true, cat(op(add, 3), op(back, 9), op(add, 4), op(forward, 40), op(add, 1)))        // clock steps back
	f.Add(uint8(3), false, cat(op(add, 1), op(leap, 0), op(add, 2), op(forward, 4), op(addCurrent, 3))) // centuries ahead
	f.Add(uint8(2), true, cat(op(add, 1), op(back, 64), op(addCurrent, 2), op(forward, 4)))             // back past the window
	f.Add(uint8(3), false, cat(op(laneAdd, 1), op(laneAdd+kinds, 0), op(add, 2), op(forward, 4),
		op(laneAdd+2*kinds, 5), op(addCurrent, 1), op(jump, 1), op(laneAdd, 7))) // joined lanes
	f.Fuzz(func(t *testing.T, size uint8, ignoreCurrent bool, steps []byte) {
		n := int64(size%16) + 1
		const interval = time.Second
		clk := &stepClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
		opts := []rollingwindow.Option{rollingwindow.WithClock(clk)}
		if ignoreCurrent {
			opts = append(opts, rollingwindow.IgnoreCurrentBucket())
		}
		wi, err := rollingwindow.New[int64](int(n), interval, opts...)
		require.NoError(t, err)
		wf, err := rollingwindow.New[float64](int(n), interval, opts...)
		require.NoError(t, err)
		we, err := rollingwindow.New[int64](int(n), interval, append(opts, rollingwindow.WithClockEvery(3))...)
		require.NoError(t, err)
		var lanesI, lanesE [lanes]rollingwindow.Lane[int64]
		for i := range lanes {
			require.NoError(t, wi.AddLane(&lanesI[i]))
			require.NoError(t, we.AddLane(&lanesE[i]))
		}
		ref := &model{start: clk.now, interval: interval, size: n}
		var absSum float64
		var lifeSum, lifeCount int64

		check := func() {
			wantSum, wantFSum, wantCount := ref.totals(ignoreCurrent)
			sum, count := wi.Totals()
			require.Equal(t, wantSum, sum, "int64 sum")
			require.Equal(t, wantCount, count, "int64 count")
			require.GreaterOrEqual(t, count, int64(0))
			fsum, fcount := wf.Totals()
			require.Equal(t, wantCount, fcount, "float64 count")
			require.InDelta(t, wantFSum, fsum, 1e-9*(1+absSum), "float64 sum")
			var reduced rollingwindow.Bucket[int64]
			buckets := 0
			wi.Reduce(func(b rollingwindow.Bucket[int64]) {
				require.GreaterOrEqual(t, b.Count, int64(0))
				reduced.Sum += b.Sum
				reduced.Count += b.Count
				buckets++
			})
			require.Equal(t, rollingwindow.Bucket[int64]{Sum: wantSum, Count: wantCount}, reduced, "Reduce")
			wantBuckets := int(n)
			if ignoreCurrent {
				wantBuckets--
			}
			require.Equal(t, wantBuckets, buckets)
			done, cur := wi.Parts()
			curSum, curCount := ref.bucket(ref.current)
			require.Equal(t, rollingwindow.Bucket[int64]{Sum: curSum, Count: curCount}, cur, "Parts: current")
			allSum, _, allCount := ref.totals(false)
			require.Equal(t, rollingwindow.Bucket[int64]{Sum: allSum - curSum, Count: allCount - curCount}, done, "Parts: done")
			fdone, fcur := wf.Parts()
			require.Equal(t, curCount, fcur.Count, "float64 Parts: current")
			require.Equal(t, allCount-curCount, fdone.Count, "float64 Parts: done")
			require.Equal(t, cur, wi.Current(), "Current")
			require.Equal(t, rollingwindow.Bucket[int64]{Sum: lifeSum, Count: lifeCount}, wi.Lifetime(), "Lifetime")
			require.Equal(t, rollingwindow.Bucket[int64]{Sum: lifeSum, Count: lifeCount}, we.Lifetime(), "WithClockEvery: Lifetime")
			// check moves the windows to the clock after every step, so
			// that an add that reads no clock lands in the right bucket.
			esum, ecount := we.Totals()
			require.Equal(t, wantSum, esum, "WithClockEvery: sum")
			require.Equal(t, wantCount, ecount, "WithClockEvery: count")
		}

		// record adds v to both windows, through addInt and addFloat, and
		// to the model.
		record := func(v int64, addInt func(int64), addFloat func(float64), addEvery func(int64)) {
			addInt(v)
			addEvery(v)
			addFloat(asFloat(v))
			ref.entries = append(ref.entries, entry{bucket: ref.current, value: v})
			absSum += math.Abs(asFloat(v))
			lifeSum += v
			lifeCount++
		}

		if len(steps) > 9*256 { // the model re-sums on every read: keep runs short
			steps = steps[:9*256]
		}
		for len(steps) >= 9 {
			kind, lane, arg := steps[0]%kinds, steps[0]/kinds%lanes, binary.LittleEndian.Uint64(steps[1:9])
			steps = steps[9:]
			switch kind {
			case add:
				record(int64(arg), wi.Add, wf.Add, we.Add)
			case forward: // up to 64 quarter-intervals
				clk.now = clk.now.Add(time.Duration(arg%65) * interval / 4)
			case jump: // whole windows, up to about half a year, while under a century has passed
				if clk.now.Sub(ref.start) < 100*365*24*time.Hour {
					clk.now = clk.now.Add(time.Duration(arg%(1<<20)) * interval * time.Duration(n))
				}
			case back: // up to 64 quarter-intervals, which may be more than the window
				clk.now = clk.now.Add(-time.Duration(arg%65) * interval / 4)
			case leap: // centuries ahead, past what time.Duration holds
				clk.now = clk.now.Add(time.Duration(arg%2+1) * 200 * 365 * 24 * time.Hour)
			case addCurrent: // without reading the clock
				record(int64(arg), wi.AddCurrent, wf.AddCurrent, we.AddCurrent)
			case laneAdd: // to a joined lane, without reading the clock
				record(int64(arg), lanesI[lane].Add, wf.AddCurrent, lanesE[lane].Add) // lanes join integer windows
			}
			ref.move(clk.now)
			check()
		}

		// Everything expires a full window after the current bucket, even if
		// the clock last stepped back from it.
		clk.now = ref.start.Add(time.Duration(ref.current+n) * interval)
		ref.move(clk.now)
		check()
		sum, count := wi.Totals()
		require.Equal(t, int64(0), sum)
		require.Equal(t, int64(0), count)
	})
}
