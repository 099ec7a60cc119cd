package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/srebreaker/srebreaker/criticality"
)

// levels are the criticalities of a traffic mix, in the order a mix gives
// them: CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE.
var levels = [4]criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}

// levelNames are the short names the report gives the levels.
var levelNames = [4]string{"CP", "C", "SP", "S"}

// mix is the share of the offered calls at each level, in the order of
// levels; the zero mix means calls name no criticality.
type mix [4]float64

func (m mix) set() bool { return m != mix{} }

// String writes the mix as the -mix flag takes it: "20,40,20,20".
func (m mix) String() string {
	parts := make([]string, len(m))
	for i, v := range m {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// parseMix reads four non-negative weights separated by commas, CRITICAL_PLUS
// first; they need not add up to 100, only to more than 0.
func parseMix(s string) (mix, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return mix{}, fmt.Errorf("%q: want four weights, CRITICAL_PLUS,CRITICAL,SHEDDABLE_PLUS,SHEDDABLE, such as 20,40,20,20", s)
	}
	var m mix
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return mix{}, fmt.Errorf("%q: %s weight %q is not a number", s, levels[i], p)
		}
		m[i] = v
	}
	return m, m.validate()
}

func (m mix) validate() error {
	total := 0.0
	for i, v := range m {
		if !(v >= 0 && v <= 1e6) {
			return fmt.Errorf("mix: %s weight %v: must be between 0 and 1,000,000", levels[i], v)
		}
		total += v
	}
	if total == 0 {
		return errors.New("mix: the weights add up to 0; leave the mix out for calls without a criticality")
	}
	return nil
}

// mixer hands out levels in the proportions of a mix, spread evenly: smooth
// weighted round robin, so the same mix always gives the same sequence.
// With shuffle set, deal takes the levels of a slot's calls from that
// sequence and shuffles them, and next hands them out in that order.
type mixer struct {
	weights, credit [4]float64
	total           float64

	shuffle *rand.Rand // nil to spread the levels evenly
	dealt   []int      // the slot's levels, with shuffle
	dealtAt int        // the index in dealt of the next call's level
}

// deal takes the levels of the next n calls and puts them in a random
// order; next hands them out before it takes any more.
func (x *mixer) deal(n int) {
	x.dealt, x.dealtAt = x.dealt[:0], 0
	for range n {
		x.dealt = append(x.dealt, x.spread())
	}
	x.shuffle.Shuffle(len(x.dealt), func(i, j int) { x.dealt[i], x.dealt[j] = x.dealt[j], x.dealt[i] })
}

// slotCalls returns how many of phase p's calls, from call i on, arrive in
// the 100 ms slot of call i.
func slotCalls(p phase, i int64) int {
	s, n := p.arrival(i)/slot, p.requests()
	j := i
	for j < n && p.arrival(j)/slot == s {
		j++
	}
	return int(j - i)
}

func newMixer(m mix) *mixer {
	x := &mixer{weights: m}
	for _, w := range m {
		x.total += w
	}
	return x
}

// next returns the index (into levels) of the next call's level.
func (x *mixer) next() int {
	if x.dealtAt < len(x.dealt) {
		x.dealtAt++
		return x.dealt[x.dealtAt-1]
	}
	return x.spread()
}

// spread returns the next level of the evenly spread sequence.
func (x *mixer) spread() int {
	best := 0
	for i, w := range x.weights {
		x.credit[i] += w
		if x.credit[i] > x.credit[best] {
			best = i
		}
	}
	x.credit[best] -= x.total
	return best
}

// levelCapacity is a dependency's capacity when calls carry a criticality:
// it sheds the lowest levels first, as a server that reads the criticality
// does. A call spends room as with capacity, but a call of a level may
// spend it only down to a floor: the calls of the higher levels that
// reached the dependency in the previous 100 ms slot, kept for those
// levels. The highest level's floor is 0.
type levelCapacity struct {
	*capacity
	prev, cur [4]int // calls that reached the dependency per level, in the previous and current slot
	curSlot   int
}

func newLevelCapacity(perSecond float64) *levelCapacity {
	return &levelCapacity{capacity: newCapacity(perSecond), curSlot: -1}
}

// moveTo makes the slot of since the current one.
func (c *levelCapacity) moveTo(since time.Duration) {
	if i := int(since / slot); i != c.curSlot {
		c.prev = [4]int{}
		if i == c.curSlot+1 {
			c.prev = c.cur
		}
		c.cur, c.curSlot = [4]int{}, i
	}
}

// floor returns the room kept for the levels above l.
func (c *levelCapacity) floor(l int) float64 {
	n := 0
	for h := range l { // levels are ordered highest first
		n += c.prev[h]
	}
	return float64(n)
}

// roomFor reports whether a call of level l at since would be served.
func (c *levelCapacity) roomFor(since time.Duration, l int) bool {
	if math.IsInf(c.perSecond, 1) {
		return true
	}
	c.moveTo(since)
	c.advance(since)
	return c.room >= 1+c.floor(l)-roomEpsilon
}

// takeFor serves a call of level l at since if there is room for it.
func (c *levelCapacity) takeFor(since time.Duration, l int) bool {
	c.moveTo(since)
	c.cur[l]++
	if !c.roomFor(since, l) {
		return false
	}
	if !math.IsInf(c.perSecond, 1) {
		c.room--
	}
	return true
}

// levelCounts are the calls of one level in a stretch of time.
type levelCounts struct {
	offered, allowed, succeeded, dropped int
}

func (c *levelCounts) add(o levelCounts) {
	c.offered += o.offered
	c.allowed += o.allowed
	c.succeeded += o.succeeded
	c.dropped += o.dropped
}

// levelFigures are the per-level figures of the overload phase.
type levelFigures struct {
	succeeded [4]float64 // % of each level's offered calls that succeeded
	// ofAttainable is the % of each level's offered calls that succeeded,
	// of those the capacity could serve once the higher levels were served.
	ofAttainable [4]float64
	dropShare    [4]float64 // % of the phase's drops that fell on each level
}

// levelFigures returns the per-level figures of phase p.
func (r *result) levelFigures(p int) levelFigures {
	var f levelFigures
	c, ph := r.phases[p], r.scenario.phases[p]
	left := ph.capacity * ph.length.Seconds() // capacity left for this level and below
	for l, lc := range c.levels {
		f.succeeded[l] = pct(lc.succeeded, lc.offered)
		if attainable := math.Min(float64(lc.offered), math.Max(0, left)); attainable > 0 {
			f.ofAttainable[l] = math.Min(100, 100*float64(lc.succeeded)/attainable)
		} else {
			f.ofAttainable[l] = 100
		}
		left -= float64(lc.succeeded)
		f.dropShare[l] = pct(lc.dropped, c.dropped)
	}
	return f
}

// printLevels prints, per phase, each level's calls, and the overload
// phase's per-level figures.
func printLevels(out io.Writer, res *result, nameWidth int) {
	order, serves := "spread evenly", "the highest levels first"
	if res.scenario.shuffle {
		order = "shuffled per 100 ms"
	}
	if res.scenario.fifo {
		serves = "first come, first served"
	}
	fmt.Fprintf(out, "mix: %s (CRITICAL_PLUS,CRITICAL,SHEDDABLE_PLUS,SHEDDABLE), %s; the dependency serves %s\n",
		res.scenario.mix, order, serves)
	fmt.Fprintf(out, "%-*s %5s %9s %9s %10s %9s %11s\n", nameWidth, "phase", "level", "offered", "allowed%", "succeeded%", "dropped%", "% of drops")
	for p, c := range res.phases {
		if res.scenario.phases[p].length == 0 {
			continue
		}
		for l, lc := range c.levels {
			fmt.Fprintf(out, "%-*s %5s %9d %8.1f%% %9.1f%% %8.1f%% %10.1f%%\n", nameWidth, c.phase, levelNames[l],
				lc.offered, pct(lc.allowed, lc.offered), pct(lc.succeeded, lc.offered), pct(lc.dropped, lc.offered),
				pct(lc.dropped, c.dropped))
		}
	}
	fmt.Fprintln(out)
	if p := res.phaseOf(roleOverload); p >= 0 {
		f := res.levelFigures(p)
		for l := range levels {
			fmt.Fprintf(out, "overload: %-14s succeeded %5.1f%%, %5.1f%% of what the capacity left it; %5.1f%% of the drops\n",
				levels[l], f.succeeded[l], f.ofAttainable[l], f.dropShare[l])
		}
		fmt.Fprintln(out)
	}
}
