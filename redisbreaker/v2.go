package redisbreaker

import (
	"fmt"
	"strconv"
	"strings"
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
// them, converted to histories (v2History), so that processes not yet
// upgraded still count in the fleet, and publishes its own beside its
// history while [WithV2] is on (countsV2), so that they still count it.

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

// parseV2 reads a value in layout v2: when it was published, and its
// counts.
func parseV2(v string) (time.Time, countsV2, error) {
	fields := strings.Fields(v)
	if len(fields) != 12 || fields[0] != "2" {
		return time.Time{}, countsV2{}, fmt.Errorf("v2 value %.60q: not 12 numbers starting with 2", v)
	}
	ms, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return time.Time{}, countsV2{}, fmt.Errorf("v2 value %.60q: time: %w", v, err)
	}
	var c countsV2
	for i := range c {
		n, err := strconv.ParseInt(fields[i+2], 10, 64)
		if err != nil || n < 0 || n > maxCount {
			return time.Time{}, countsV2{}, fmt.Errorf("v2 value %.60q: count %d: not between 0 and %d", v, i+1, int64(maxCount))
		}
		c[i] = n
	}
	return time.UnixMilli(ms), c, nil
}

// v2History converts counts published at t in layout v2 to a history on
// the grid of own, as best it can be: the window's calls spread evenly
// over the window's finished buckets (the newest being the last that
// finished at t), and the calls read back for beyond them in the block
// before. The formula over the window, and reading back on light traffic,
// then judge them as the v2 process did; the runs of agreeing buckets are
// those of even buckets: a window of failures alone is a run of failures,
// a mixed one no run (what a run of the v2 process held beyond that is
// lost).
func v2History(t time.Time, c countsV2, own fleet.History) fleet.History {
	h := fleet.History{Span: own.Span, Size: own.Size}
	if own.Span <= 0 || own.Size < 1 {
		return fleet.History{}
	}
	h.Newest = floorDiv(t.UnixNano(), int64(own.Span)) - 1
	n := int64(own.Size - 1)
	if n > 0 && c[0]+c[1]+c[2] > 0 {
		h.Buckets = make([]fleet.Bucket, n)
		for i := range h.Buckets {
			// Bucket i gets its share, the newest ones the remainder.
			share := func(total int64) int64 { return total*int64(i+1)/n - total*int64(i)/n }
			h.Buckets[i] = fleet.Bucket{Successes: share(c[0]), Failures: share(c[1]), Drops: share(c[2])}
		}
	}
	older := fleet.Bucket{Successes: max(c[5]-c[0], 0), Failures: max(c[6]-c[1], 0), Drops: max(c[7]-c[2], 0)}
	if older != (fleet.Bucket{}) {
		h.NewestBlock = floorDiv(h.Newest-n, int64(own.Size))
		h.Blocks = []fleet.Bucket{older}
	}
	if len(h.Buckets) == 0 && len(h.Blocks) == 0 {
		return fleet.History{}
	}
	return h
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

// floorDiv is a/n rounded down.
func floorDiv(a, n int64) int64 {
	q := a / n
	if a%n != 0 && a < 0 {
		q--
	}
	return q
}
