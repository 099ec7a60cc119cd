package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/srebreaker/srebreaker/bench/internal/figures"
	"github.com/srebreaker/srebreaker/criticality"
)

// slot is the resolution of the transition times.
const slot = figures.Slot

// Transition times: the windows over which a slot's figure is taken.
const (
	p99Window      = 500 * time.Millisecond // the rolling p99 of served calls, over p99Calls at least
	p99Calls       = 100                    // see p99Windows
	capacityWindow = time.Second            // the rolling rate of served calls
	capacityShare  = 0.95                   // of the new capacity, to count it served
)

// transition names what a scenario times from the step between its two
// phases.
type transition int

const (
	noTransition   transition = iota
	p99Back                   // until the rolling p99 of served calls is back within the bound, and stays
	rejectionsStop            // until the last rejection
	capacityServed            // until the rolling rate served reaches 95 % of the new capacity, sustained
)

// row is the figures of one contender in one scenario, over its measured
// phases. Durations are in milliseconds, shares in percent.
type row struct {
	Scenario  string `json:"scenario"`
	Contender string `json:"contender"`
	Offered   int    `json:"offered"`
	// AchievedMultiple is the rate at which the calls were issued, ×
	// capacity: below the scenario's rate when the driver fell behind.
	AchievedMultiple float64 `json:"achieved_multiple"`
	Served           int     `json:"served"`
	// ServedShare is the calls served within the timeout, as a share of
	// what could be: in a phase at or below capacity, the share of its
	// calls served; above, the calls served while it lasted as a share of
	// capacity × its length (ShareOf says which, "mixed" for both).
	ServedShare float64 `json:"served_share"`
	ShareOf     string  `json:"share_of"`
	P50         float64 `json:"p50_ms"`
	P99         float64 `json:"p99_ms"`
	Rejected    int     `json:"rejected"`
	TimedOut    int     `json:"timed_out"`
	Failed      int     `json:"failed"`
	Gone        int64   `json:"gone_work"`
	// SlotsBusy is the share of the resource's slot time held by calls
	// over the measured phases, and HoldPast how much longer than asked,
	// in percent, a hold that began in them took: in overload, served
	// calls are at most SlotsBusy ÷ (1 + HoldPast/100) of capacity.
	SlotsBusy float64    `json:"slots_busy"`
	HoldPast  float64    `json:"hold_past"`
	Levels    [4]float64 `json:"-"` // share of each level's offered calls served, by criticality.Level.Index; -1 for a level not offered
	// LevelsByName is Levels by the levels' names, for JSON, without the
	// levels not offered.
	LevelsByName map[string]float64 `json:"levels_served"`
	// Transition is the scenario's transition time in seconds, -1 when
	// it was not reached within the phase; absent for none.
	Transition *float64 `json:"transition_s,omitempty"`
	LagP99     float64  `json:"lag_p99_ms"`
	// Behind a client Transport: the calls its breaker dropped, and those
	// that reached the server, × capacity.
	Throttled       int      `json:"throttled,omitempty"`
	ReachedMultiple *float64 `json:"reached_multiple,omitempty"`
}

// percentile returns the q-quantile (0 < q ≤ 1) of sorted by nearest
// rank, 0 for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// settledAt returns the time from the first slot to the end of the last
// bad one, 0 when none was, and false when the last slot is bad: the
// figure never settled.
func settledAt(bad []bool) (time.Duration, bool) {
	last := -1
	for i, b := range bad {
		if b {
			last = i
		}
	}
	if len(bad) > 0 && last == len(bad)-1 {
		return 0, false
	}
	return time.Duration(last+1) * slot, true
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measure computes the row of r, a run of sc whose resource serves
// capacity calls/s at its first service time; bound is twice the
// unloaded p99.
func measure(sc scenario, contender string, r *record, capacity float64, bound time.Duration) row {
	from := sc.measuredFrom()
	length := sc.length() - from
	out := row{Scenario: sc.label, Contender: contender, Gone: r.gone}
	out.SlotsBusy, out.HoldPast = busy(r.holds, r.slots, from, from+length)
	var latencies, lags []time.Duration
	var offered, servedAt [4]int
	var lastIssue time.Duration
	perPhase, servedIn := make([]int, len(sc.phases)), make([]int, len(sc.phases)) // calls due in each phase, and served
	for i, a := range r.arrivals {
		if a.at < from {
			continue
		}
		c := r.calls[i]
		out.Offered++
		perPhase[a.phase]++
		offered[a.level.Index()]++
		lags = append(lags, c.lag)
		lastIssue = max(lastIssue, a.at+c.lag)
		switch c.outcome {
		case served:
			out.Served++
			servedAt[a.level.Index()]++
			servedIn[a.phase]++
			latencies = append(latencies, c.latency)
		case rejected:
			out.Rejected++
		case timedOut:
			out.TimedOut++
		case throttled:
			out.Throttled++
		default:
			out.Failed++
		}
	}
	slices.Sort(latencies)
	slices.Sort(lags)
	out.P50, out.P99 = ms(percentile(latencies, 0.5)), ms(percentile(latencies, 0.99))
	out.LagP99 = ms(percentile(lags, 0.99))
	if span := max(from+length, lastIssue) - from; span > 0 && capacity > 0 {
		out.AchievedMultiple = float64(out.Offered) / span.Seconds() / capacity
	}
	// A phase at or below capacity is judged by its calls, one above it
	// by what the server served while it lasted, whenever those calls
	// were due: the calls of a step can be served up to a timeout after
	// it, and capacity × length is what a step holds.
	var got, servable float64
	below, above := false, false
	var begin time.Duration
	for p, ph := range sc.phases {
		end := begin + ph.length
		if p >= sc.measuredPhase() {
			room := capacity / ph.scaleOrOne() * ph.length.Seconds()
			if float64(perPhase[p]) <= room {
				got, servable, below = got+float64(servedIn[p]), servable+float64(perPhase[p]), true
			} else {
				for _, c := range r.calls {
					if c.outcome == served && c.done >= begin && c.done < end {
						got++
					}
				}
				servable, above = servable+room, true
			}
		}
		begin = end
	}
	out.ShareOf = map[[2]bool]string{{true, false}: "offered", {false, true}: "capacity", {true, true}: "mixed"}[[2]bool{below, above}]
	if servable > 0 {
		out.ServedShare = 100 * got / servable
	}
	out.LevelsByName = map[string]float64{}
	for l := range out.Levels {
		out.Levels[l] = -1
		if offered[l] > 0 {
			out.Levels[l] = figures.Pct(servedAt[l], offered[l])
			out.LevelsByName[(criticality.Sheddable + criticality.Level(l)).String()] = out.Levels[l]
		}
	}
	if sc.transport {
		reached := float64(out.Offered-out.Throttled) / length.Seconds() / capacity
		out.ReachedMultiple = &reached
	}
	if sc.transition != noTransition {
		d, ok := transitionTime(sc, r, capacity, bound)
		t := -1.0
		if ok {
			t = d.Seconds()
		}
		out.Transition = &t
	}
	return out
}

// busy returns the share of slots' time in [from, to) that holds cover,
// and how much longer than asked the holds that began in it took, both
// in percent.
func busy(holds []hold, slots int, from, to time.Duration) (share, past float64) {
	if slots < 1 || to <= from {
		return 0, 0
	}
	var held, took, asked time.Duration
	for _, h := range holds {
		held += max(0, min(h.to, to)-max(h.from, from))
		if h.from >= from && h.from < to {
			took, asked = took+h.to-h.from, asked+h.asked
		}
	}
	share = 100 * float64(held) / (float64(slots) * float64(to-from))
	if asked > 0 {
		past = 100 * (float64(took)/float64(asked) - 1)
	}
	return share, past
}

// transitionTime times sc's transition in r, from the start of its
// measured phase.
func transitionTime(sc scenario, r *record, capacity float64, bound time.Duration) (time.Duration, bool) {
	step := sc.measuredFrom()
	n := int((sc.length() - step + slot - 1) / slot)
	switch sc.transition {
	case rejectionsStop:
		bad := make([]bool, n)
		for i, a := range r.arrivals {
			if a.at >= step && r.calls[i].outcome == rejected {
				bad[min(int((a.at-step)/slot), n-1)] = true
			}
		}
		return settledAt(bad)
	case p99Back:
		windows := p99Windows(sc, r)
		bad := make([]bool, len(windows))
		for s, w := range windows {
			bad[s] = len(w) == 0 || percentile(w, 0.99) > bound
		}
		return settledAt(bad)
	case capacityServed:
		newCapacity := capacity / sc.phases[sc.measuredPhase()].scaleOrOne()
		done := servedBy(r, step)
		bad := make([]bool, n)
		for s := range bad {
			end := step + time.Duration(s+1)*slot
			begin := max(step, end-capacityWindow)
			k := 0
			for _, c := range done {
				if c.done > begin && c.done <= end {
					k++
				}
			}
			bad[s] = float64(k) < capacityShare*newCapacity*(end-begin).Seconds()
		}
		return settledAt(bad)
	}
	return 0, false
}

// p99Windows returns, for each slot of sc's measured phase in r, the
// sorted latencies of the calls served in the p99Window that ends with
// it, or of the last p99Calls served in the measured phase by its end
// when the window holds fewer: the nearest-rank p99 of fewer than 100
// calls is their slowest (the 98 or 99 calls that 4 handlers × 20 ms
// serve in 500 ms had one call's latency for their p99).
func p99Windows(sc scenario, r *record) [][]time.Duration {
	step := sc.measuredFrom()
	done := servedBy(r, step)
	slices.SortStableFunc(done, func(a, b call) int { return cmp.Compare(a.done, b.done) })
	windows := make([][]time.Duration, int((sc.length()-step+slot-1)/slot))
	for s := range windows {
		end := step + time.Duration(s+1)*slot
		hi, _ := slices.BinarySearchFunc(done, end, func(c call, t time.Duration) int {
			return cmp.Compare(c.done, t+1) // the first call done after end
		})
		lo, _ := slices.BinarySearchFunc(done, end-p99Window, func(c call, t time.Duration) int {
			return cmp.Compare(c.done, t+1) // the first call done after the window's start
		})
		if hi-lo < p99Calls {
			lo = max(0, hi-p99Calls)
		}
		w := make([]time.Duration, 0, hi-lo)
		for _, c := range done[lo:hi] {
			w = append(w, c.latency)
		}
		slices.Sort(w)
		windows[s] = w
	}
	return windows
}

// printWindows writes to w, for a scenario timed until its p99 is back
// within bound, each window's served calls, p99 and slowest, and every
// call that ended in the measured phase served past bound, with its level: a late
// window is often a slow call or two (the p99 of 100 to 199 calls is the
// second slowest).
func printWindows(w io.Writer, sc scenario, contender string, r *record, bound time.Duration) {
	step := sc.measuredFrom()
	fmt.Fprintf(w, "%s, %s: windows of %v (%d calls at least), bound %v\n", sc.label, contender, p99Window, p99Calls, bound)
	for s, calls := range p99Windows(sc, r) {
		if len(calls) == 0 {
			fmt.Fprintf(w, "  to %v: none served\n", time.Duration(s+1)*slot)
			continue
		}
		fmt.Fprintf(w, "  to %v: %d served, p99 %v, slowest %v\n", time.Duration(s+1)*slot, len(calls),
			percentile(calls, 0.99).Round(time.Millisecond/10), calls[len(calls)-1].Round(time.Millisecond/10))
	}
	for i, a := range r.arrivals {
		if c := r.calls[i]; c.done >= step && c.outcome == served && c.latency > bound {
			fmt.Fprintf(w, "  past the bound: ended at %v, %v, %v\n", (c.done - step).Round(time.Millisecond),
				a.level, c.latency.Round(time.Millisecond/10))
		}
	}
}

// servedBy returns the calls of r served at or after from, by when they
// ended.
func servedBy(r *record, from time.Duration) []call {
	var out []call
	for _, c := range r.calls {
		if c.outcome == served && c.done >= from {
			out = append(out, c)
		}
	}
	return out
}

// table is the rows of one scenario group, with what the reader needs
// to read them.
type table struct {
	Title   string   `json:"title"`
	Notes   []string `json:"notes"`
	Rows    []row    `json:"rows"`
	Caption string   `json:"transition,omitempty"` // the transition column's header, empty for none
	Behind  bool     `json:"behind_transport,omitempty"`
}

// levelOrder is the levels in the tables' order, the highest first.
var levelOrder = []criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}

// markdown writes t as Markdown: a heading, its notes, and the table.
func (t table) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", t.Title)
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "%s\n", n)
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
	}
	head := []string{"offered", "contender", "achieved", "served within the timeout", "p50 / p99 of served",
		"rejected", "timed out", "work for callers gone", "slots busy, a hold past S"}
	if t.Behind {
		head = append(head, "dropped by the client's breaker", "reaching the server")
	}
	for _, l := range levelOrder {
		head = append(head, l.String()+" served")
	}
	if t.Caption != "" {
		head = append(head, t.Caption)
	}
	head = append(head, "driver's lag, p99")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n")
	b.WriteString(strings.Repeat("|---", len(head)) + "|\n")
	for _, r := range t.Rows {
		cells := []string{r.Scenario, r.Contender, fmt.Sprintf("%.2f×", r.AchievedMultiple), servedCell(r),
			fmt.Sprintf("%s / %s ms", num(r.P50), num(r.P99)), thousands(int64(r.Rejected)),
			thousands(int64(r.TimedOut)), thousands(r.Gone), fmt.Sprintf("%.1f %%, %+.1f %%", r.SlotsBusy, r.HoldPast)}
		if t.Behind {
			cells = append(cells, thousands(int64(r.Throttled)), fmt.Sprintf("%.2f×", deref(r.ReachedMultiple)))
		}
		for _, l := range levelOrder {
			cells = append(cells, levelCell(r.Levels[l.Index()]))
		}
		if t.Caption != "" {
			cells = append(cells, transitionCell(r.Transition))
		}
		cells = append(cells, fmt.Sprintf("%s ms", num(r.LagP99)))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func levelCell(share float64) string {
	if share < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", share)
}

func servedCell(r row) string {
	if r.Offered == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f %% of %s", r.ServedShare, r.ShareOf)
}

func transitionCell(t *float64) string {
	switch {
	case t == nil:
		return "–"
	case *t < 0:
		return "not within the phase"
	}
	return fmt.Sprintf("%.1f s", *t)
}

// num writes a duration in ms with the precision it deserves.
func num(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
