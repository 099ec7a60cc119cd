package redisbreaker

import (
	"strconv"
	"time"

	"github.com/srebreaker/srebreaker/fleet"
)

// Layout v2 is how redisbreaker published a process's state before
// histories: ten counts that mirrored what the drop decision read, in a
// hash field named by the process's ID,
//
//	"2 <ms> S F D RS RF ReS ReF ReD Down Rec"
//
// (the layout, when it was published in Unix ms, then the window's
// successes, failures and drops, the newest run's successes and failures,
// the successes, failures and drops read back for on light traffic, and 1
// or 0 for a process down a window, or recovering). A v3 sharer reads
// them, converted to histories by its script (see v2History), so that
// processes not yet upgraded still count in the fleet, and publishes its
// own beside its history while [WithV2] is on (countsV2Of), so that they
// still count it.
//
// v2History: the script converts counts published at t to a history on
// the grid of the process that sweeps, as best it can be: the window's
// calls spread evenly over the window's finished buckets (the newest being
// the last that finished at t), and the calls read back for beyond them
// in the block before. The formula over the window, and reading back on
// light traffic, then judge them as the v2 process did; the runs of
// agreeing buckets are those of even buckets: a window of failures alone
// is a run of failures, a mixed one no run (what a run of the v2 process
// held beyond that is lost). Converted values join the sum when the
// script sweeps, once a quarter window, and stay in it until the next
// sweep.

// countsV2 is a process's state in layout v2.
type countsV2 [10]int64

// v2Evidence is how many admitted calls the breaker's default reads back
// for on light traffic (its evidence setting), which a history does not
// carry: countsV2 reads back as far for the counts a v2 reader wants.
const v2Evidence = 40

// encodeV2 writes c, published at t, in layout v2.
func encodeV2(t time.Time, c countsV2) string {
	b := make([]byte, 0, 96)
	b = append(b, '2', ' ')
	b = strconv.AppendInt(b, t.UnixMilli(), 10)
	for _, v := range c {
		b = append(b, ' ')
		b = strconv.AppendInt(b, v, 10)
	}
	return string(b)
}

// countsV2Of returns what a v2 reader wants of own: the window's calls,
// the newest run of agreeing buckets, the calls read back for on light
// traffic (to v2Evidence admitted calls, as the breaker reads back), and whether the
// window's finished buckets all failed (down) — never recovering, which a
// v2 reader takes as not.
func countsV2Of(own fleet.History) countsV2 {
	var window fleet.Bucket
	for _, b := range own.Buckets {
		window = fleet.Bucket{Successes: window.Successes + b.Successes, Failures: window.Failures + b.Failures,
			Drops: window.Drops + b.Drops}
	}
	var c countsV2
	c[0], c[1], c[2] = window.Successes, window.Failures, window.Drops
	// The newest run: buckets without outcomes neither extend nor break it.
run:
	for i := len(own.Buckets) - 1; i >= 0; i-- {
		b := own.Buckets[i]
		switch {
		case b.Successes+b.Failures == 0:
			continue
		case b.Failures == 0 && c[4] == 0:
			c[3] += b.Successes
			continue
		case b.Successes == 0 && c[3] == 0:
			c[4] += b.Failures
			continue
		}
		break run
	}
	reach := window
	for i := len(own.Blocks) - 1; i >= 0 && reach.Successes+reach.Failures < v2Evidence; i-- {
		b := own.Blocks[i]
		// The last block only in the part still wanted, in its
		// proportions, as the breaker reads it.
		if need, n := v2Evidence-reach.Successes-reach.Failures, b.Successes+b.Failures; n > need {
			f := (b.Failures*need + n/2) / n
			b = fleet.Bucket{Successes: need - f, Failures: f, Drops: b.Drops * need / n}
		}
		reach = fleet.Bucket{Successes: reach.Successes + b.Successes, Failures: reach.Failures + b.Failures,
			Drops: reach.Drops + b.Drops}
	}
	c[5], c[6], c[7] = reach.Successes, reach.Failures, reach.Drops
	if window.Successes == 0 && window.Failures > 0 && len(own.Buckets) >= own.Size-1 && c[4] == window.Failures {
		c[8] = 1
	}
	return c
}
