package breaker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/rollingwindow"
)

// Criticality is how much a call matters, the four levels of the SRE book's
// "Handling Overload": when a breaker drops calls, it drops them from the
// lowest level up. The zero value is [Critical], the default.
//
// Carry it in a context with [WithCriticality]; [Breaker.AllowCtx], the Do
// methods ending in Ctx and [Call] read it from there. The methods without
// a context, and contexts without a criticality, ask at [DefaultCriticality]:
// a breaker whose calls all ask at one level behaves as a breaker without
// criticality.
type Criticality int8

// The four levels, from the highest to the lowest.
const (
	// CriticalPlus is for calls whose failure is seen by a user and hurts
	// the most; they are dropped last.
	CriticalPlus Criticality = 1
	// Critical is the default: calls whose failure is seen by a user.
	Critical Criticality = 0
	// SheddablePlus is for calls whose failure is not seen at once and that
	// can be retried later, such as batch work.
	SheddablePlus Criticality = -1
	// Sheddable is for calls that can fail without harm, such as prefetches;
	// they are dropped first.
	Sheddable Criticality = -2
)

// DefaultCriticality is the level of a call that names none: [Critical], as
// in the SRE book.
const DefaultCriticality = Critical

// criticalities is the number of levels.
const criticalities = 4

// index maps a valid level to 0 (Sheddable) … 3 (CriticalPlus).
func (c Criticality) index() int { return int(c - Sheddable) }

// Valid reports whether c is one of the four levels.
func (c Criticality) Valid() bool { return c >= Sheddable && c <= CriticalPlus }

var criticalityNames = [criticalities]string{"SHEDDABLE", "SHEDDABLE_PLUS", "CRITICAL", "CRITICAL_PLUS"}

// String returns the level's name as the SRE book writes it: CRITICAL_PLUS,
// CRITICAL, SHEDDABLE_PLUS or SHEDDABLE; "Criticality(n)" for a value that
// is not a level.
func (c Criticality) String() string {
	if !c.Valid() {
		return "Criticality(" + strconv.Itoa(int(c)) + ")"
	}
	return criticalityNames[c.index()]
}

// ParseCriticality returns the level named s, one of the names
// [Criticality.String] returns, in any case. For anything else it returns
// [DefaultCriticality] and an error that quotes s (cut to 32 bytes).
func ParseCriticality(s string) (Criticality, error) {
	for i, name := range criticalityNames {
		if strings.EqualFold(s, name) {
			return Sheddable + Criticality(i), nil
		}
	}
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return DefaultCriticality, fmt.Errorf("breaker: criticality %q: want one of CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE", s)
}

type criticalityKey struct{}

// WithCriticality returns a copy of ctx that carries c. A c that is not one
// of the four levels is carried as [DefaultCriticality]. A nil ctx is taken
// as context.Background().
func WithCriticality(ctx context.Context, c Criticality) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if !c.Valid() {
		c = DefaultCriticality
	}
	return context.WithValue(ctx, criticalityKey{}, c)
}

// CriticalityFrom returns the level ctx carries, or [DefaultCriticality]
// when it carries none or ctx is nil.
func CriticalityFrom(ctx context.Context) Criticality {
	if ctx == nil {
		return DefaultCriticality
	}
	if c, ok := ctx.Value(criticalityKey{}).(Criticality); ok && c.Valid() {
		return c
	}
	return DefaultCriticality
}

// level is what a breaker keeps of one level other than the default.
type level struct {
	b *googleBreaker
	// calls holds the calls asked at this level: Add(1) for a dropped
	// call, Add(0) for an admitted one, so that its sum is the drops and
	// its count the calls.
	calls *rollingwindow.RollingWindow[int64]
	// outcomes holds the admitted calls of this level as the breaker's own
	// outcomes window does: Add(1) for a success, Add(0) for a failure.
	outcomes *rollingwindow.RollingWindow[int64]
}

// levelWindows holds the levels other than the default, made at the first
// call that names one; until then the breaker drops exactly as one without
// criticality. The default level's figures are what the others leave of
// the breaker's own, so that calls without a criticality cost nothing more.
type levelWindows struct {
	levels atomic.Pointer[[criticalities]*level] // nil at the default's index

	// defaultTotals are the highest lifetime figures of the default level
	// a snapshot has reported (successes, failures, drops): see
	// levelWindows.lifetime.
	defaultTotals [3]atomic.Int64

	// What a window is made of, kept from New.
	size int
	span time.Duration
	opts []rollingwindow.Option
}

func (l *levelWindows) init(size int, span time.Duration, opts []rollingwindow.Option) {
	l.size, l.span, l.opts = size, span, opts
}

// get returns the levels, making them if need be.
func (l *levelWindows) get(b *googleBreaker) *[criticalities]*level {
	if lv := l.levels.Load(); lv != nil {
		return lv
	}
	lv := new([criticalities]*level)
	for i := range lv {
		if Sheddable+Criticality(i) != DefaultCriticality {
			// The sizes were validated with the breaker's own windows.
			calls, _ := rollingwindow.New[int64](l.size, l.span, l.opts...)
			outcomes, _ := rollingwindow.New[int64](l.size, l.span, l.opts...)
			lv[i] = &level{b: b, calls: calls, outcomes: outcomes}
		}
	}
	if l.levels.CompareAndSwap(nil, lv) {
		return lv
	}
	return l.levels.Load()
}

// levelCounts are the window's figures of one level.
type levelCounts struct {
	calls, drops        int64 // calls asked, admitted or dropped, and those dropped
	successes, failures int64 // admitted calls that finished, by outcome
}

// counts returns each level's figures in the window at t, lowest level
// first, given the breaker's own figures then (c, with its drops). The
// default level gets what the others leave, never below 0.
func (l *levelWindows) counts(lv *[criticalities]*level, t time.Duration, c *tally) (out [criticalities]levelCounts) {
	var others levelCounts
	for i, x := range lv {
		if x == nil {
			continue
		}
		o := &out[i]
		o.drops, o.calls = x.calls.TotalsAtOffset(t)
		var admitted int64
		o.successes, admitted = x.outcomes.TotalsAtOffset(t)
		o.failures = admitted - o.successes
		others.calls += o.calls
		others.drops += o.drops
		others.successes += o.successes
		others.failures += o.failures
	}
	out[DefaultCriticality.index()] = levelCounts{
		calls:     max(0, c.successes+c.failures+c.drops-others.calls),
		drops:     max(0, c.drops-others.drops),
		successes: max(0, c.successes-others.successes),
		failures:  max(0, c.failures-others.failures),
	}
	return out
}

// levelProbabilities returns each level's drop probability, lowest level
// first, such that the expected drops, Σ probs[i]·calls[i], are the share p
// of all the calls, taken from the lowest level up: a level is dropped
// whole before the next one loses any call. A level without calls in the
// window gets 1 if the drops are not yet all taken below it, else 0.
func levelProbabilities(p float64, calls [criticalities]int64) (probs [criticalities]float64) {
	if !(p > 0) {
		return probs
	}
	var total int64
	for _, n := range calls {
		total += n
	}
	left := p * float64(total) // drops still to place
	for i, n := range calls {
		switch {
		case left <= 0:
			probs[i] = 0
		case float64(n) <= left:
			probs[i] = 1
		default:
			probs[i] = left / float64(n)
		}
		left -= float64(n)
	}
	return probs
}

// levelDropProbabilities returns each level's drop probability, lowest
// level first, while the breaker drops with probability p overall: its
// share of p placed from the lowest level up (levelProbabilities), or,
// when more, what the formula says of the level's own calls, for a level
// whose calls fail clearly more often than the breaker's as a whole (their
// failure ratio more than halfway from the breaker's to 1). As the SRE
// book keeps
// statistics per criticality, a level that the dependency itself sheds
// (a server that sheds the lowest levels first) is then shed as a failing
// dependency would be, rather than spend the formula's K attempts per
// success on calls bound to fail; a dependency that fails every level
// alike, down or overloaded without regard to criticality, leaves the
// placement from the lowest level up as it is. The formula reads a level's
// calls without trust in recent buckets, which the breaker's own figures
// have.
func (b *googleBreaker) levelDropProbabilities(p float64, counts [criticalities]levelCounts) [criticalities]float64 {
	var calls [criticalities]int64
	var all levelCounts
	for i, c := range counts {
		calls[i] = c.calls
		all.successes += c.successes
		all.failures += c.failures
	}
	probs := levelProbabilities(p, calls)
	if !(p > 0) {
		return probs
	}
	for i, c := range counts {
		// The level's failure ratio is more than halfway from the breaker's
		// to 1: c.failures/n > (1 + all.failures/N)/2, with n and N the
		// level's and the breaker's finished calls.
		n, total := float64(c.successes+c.failures), float64(all.successes+all.failures)
		if !(2*float64(c.failures)*total > n*(total+float64(all.failures))) {
			continue
		}
		num, den := b.formula.ratio(&tally{successes: c.successes, failures: c.failures, drops: c.drops})
		probs[i] = max(probs[i], b.formula.probability(num, den))
	}
	return probs
}

// levelProbability returns the drop probability of a call at level c,
// given the breaker's figures c at time t and the formula's ratio num/den
// (num > 0) of them.
func (b *googleBreaker) levelProbability(lv *[criticalities]*level, c Criticality, t time.Duration, tl *tally,
	num, den float64) float64 {
	if !b.formula.countDrops { // tally read the drops only if it needed them
		withDrops := *tl
		withDrops.drops, _ = b.drops.TotalsAtOffset(t)
		tl = &withDrops
	}
	counts := b.levels.counts(lv, t, tl)
	return b.levelDropProbabilities(b.formula.probability(num, den), counts)[c.index()]
}

// dropsDefault reports whether a call at the default level is dropped,
// given the breaker's figures c at time t and the formula's ratio num/den
// (num > 0) of them. Without calls at other levels it is the formula's own
// draw, exactly as without criticality.
func (b *googleBreaker) dropsDefault(t time.Duration, c *tally, num, den float64) bool {
	lv := b.levels.levels.Load()
	if lv == nil {
		return b.formula.drops(num, den, b.proba.Float64())
	}
	return b.proba.Float64() < b.levelProbability(lv, DefaultCriticality, t, c, num, den)
}

// admitLevel is admit for a call at level c, other than the default: it
// returns the level the call was admitted at, or the drop error.
func (b *googleBreaker) admitLevel(c Criticality) (*level, error) {
	lv := b.levels.get(b)
	x := lv[c.index()]
	t := b.now()
	tl := b.tally(t)
	num, den := b.formula.ratio(&tl)
	if o := b.fleet.others.Load(); o != nil { // see fleet.go
		num, den = b.withFleet(o, t, tl.failures, num, den)
	}
	if b.events != nil {
		b.events.observe(b, t, num, den)
	}
	if num == 0 {
		x.calls.AddAtOffset(t, 0)
		return x, nil
	}
	p := b.levelProbability(lv, c, t, &tl, num, den)
	if !(b.proba.Float64() < p) {
		x.calls.AddAtOffset(t, 0)
		return x, nil
	}
	x.calls.AddAtOffset(t, 1)
	b.drops.AddAtOffset(t, 1)
	b.streaks.sawDrop()
	if b.events != nil && b.events.drops {
		b.events.dropped(b, p)
	}
	return nil, b.reasons.err(b.name)
}

// allowAs is Allow for a call at level c.
func (b *googleBreaker) allowAs(c Criticality) (srebreaker.Promise, error) {
	if c == DefaultCriticality || !c.Valid() {
		return b.Allow()
	}
	x, err := b.admitLevel(c)
	if err != nil {
		return nil, err
	}
	return levelPromise{x}, nil
}

// markSuccess and markFailure record the outcome for the level first and
// for the breaker then, as admitLevel does a drop: a snapshot that reads
// the breaker's lifetime figures before the levels' then finds every call
// of the former in the latter (see levelWindows.lifetime).
func (x *level) markSuccess() {
	x.outcomes.AddAtOffset(x.b.now(), 1)
	x.b.markSuccess()
}

func (x *level) markFailure(reason string) {
	x.outcomes.AddAtOffset(x.b.now(), 0)
	x.b.markFailure(reason)
}

// levelPromise is the promise of a call admitted at a level other than
// the default: it records the outcome for the breaker and for the level.
// It is pointer-shaped, so returning it as a srebreaker.Promise does not
// allocate.
type levelPromise struct{ x *level }

func (p levelPromise) Accept()              { p.x.markSuccess() }
func (p levelPromise) Reject(reason string) { p.x.markFailure(reason) }

// Ignore records nothing, as [promise.Ignore].
func (p levelPromise) Ignore() {}

var _ srebreaker.Ignorer = levelPromise{}

// runLevel is googleBreaker.run for a call at level c, other than the
// default.
func (b *googleBreaker) runLevel(ctx context.Context, c Criticality, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) (nilPanic bool, err error) {
	x, err := b.admitLevel(c)
	if err != nil {
		if fallback != nil {
			return false, fallback(err)
		}
		return false, err
	}
	recorded := false
	defer x.recordPanic(&recorded, &nilPanic)
	err = req()
	result, reason := classify(ctx, err, acceptable)
	recorded = true
	switch result {
	case success:
		x.markSuccess()
	case failure:
		x.markFailure(reason)
	}
	return false, err
}

// recordPanic is googleBreaker.recordPanic for a call at a level.
func (x *level) recordPanic(recorded, nilPanic *bool) {
	if *recorded {
		return
	}
	v := recover()
	if v == nil {
		x.markFailure(exitedReason)
		*nilPanic = true
		return
	}
	x.markFailure(fmt.Sprint("panic: ", v))
	panic(v)
}

// CriticalityStats is what a breaker's window holds of one level; see
// [Stats].
type CriticalityStats struct {
	// Criticality is the level.
	Criticality Criticality
	// Calls are the calls asked at this level in the window, admitted or
	// dropped, and Drops those of them that were dropped; Successes and
	// Failures are the admitted calls that finished, by outcome. The
	// default level counts every call not counted at another level.
	Calls, Drops, Successes, Failures int64
	// DropProbability is the probability that a call of this level asking
	// now is dropped.
	DropProbability float64

	// TotalSuccesses, TotalFailures and TotalDrops count the same as
	// Successes, Failures and Drops since the breaker was made; they only
	// grow. The default level's are what the other levels leave of the
	// breaker's totals: while a call at another level is reporting its
	// outcome they may lag behind by that call, never run ahead, and once
	// no call is between the two, the four levels add up to the breaker's
	// totals.
	TotalSuccesses, TotalFailures, TotalDrops int64
}

// Leveled reports whether the breaker has counted a call at a level other
// than [DefaultCriticality] since it was made: an admitted call that
// finished or a dropped one. Until then every call counts at the default
// level, and exporters leave the per-level figures out.
func (s Stats) Leveled() bool {
	for _, c := range s.Criticalities {
		if c.Criticality != DefaultCriticality && c.TotalSuccesses+c.TotalFailures+c.TotalDrops > 0 {
			return true
		}
	}
	return false
}

// levelStats returns the per-level part of a snapshot at t, highest level
// first, given the breaker's figures then, its overall drop probability p
// and its lifetime figures, read before the call (see levelWindows.lifetime).
func (b *googleBreaker) levelStats(t time.Duration, c tally, p float64, lifetime levelCounts) [criticalities]CriticalityStats {
	var counts, totals [criticalities]levelCounts
	if lv := b.levels.levels.Load(); lv != nil {
		counts = b.levels.counts(lv, t, &c)
		totals = b.levels.lifetime(lv, lifetime)
	} else {
		counts[DefaultCriticality.index()] = levelCounts{calls: c.successes + c.failures + c.drops, drops: c.drops,
			successes: c.successes, failures: c.failures}
		// Every call so far is the default level's; what is reported
		// here is the floor for the differences once other levels count.
		d := &b.levels.defaultTotals
		totals[DefaultCriticality.index()] = levelCounts{successes: atomicMax(&d[0], lifetime.successes),
			failures: atomicMax(&d[1], lifetime.failures), drops: atomicMax(&d[2], lifetime.drops)}
	}
	probs := b.levelDropProbabilities(p, counts)
	var out [criticalities]CriticalityStats
	for i := range out {
		j := criticalities - 1 - i
		out[i] = CriticalityStats{Criticality: Sheddable + Criticality(j), Calls: counts[j].calls,
			Drops: counts[j].drops, Successes: counts[j].successes, Failures: counts[j].failures,
			DropProbability: probs[j], TotalSuccesses: totals[j].successes, TotalFailures: totals[j].failures,
			TotalDrops: totals[j].drops}
	}
	return out
}

// lifetime returns each level's figures since the breaker was made, lowest
// level first, given the breaker's (all, read before the levels'; calls
// left 0). The default level's are what the others leave of all: as a
// level records a call before the breaker does, the levels read after the
// breaker hold every call of all, and the difference is at most the
// default level's true figure; the highest difference reported so far
// keeps it from going back when a call at another level is between its two
// records. So the default level's figures only grow and never exceed what
// its calls were.
func (l *levelWindows) lifetime(lv *[criticalities]*level, all levelCounts) (out [criticalities]levelCounts) {
	others := levelCounts{}
	for i, x := range lv {
		if x == nil {
			continue
		}
		calls, outcomes := x.calls.Lifetime(), x.outcomes.Lifetime()
		out[i] = levelCounts{drops: calls.Sum, successes: outcomes.Sum, failures: outcomes.Count - outcomes.Sum}
		others.drops += out[i].drops
		others.successes += out[i].successes
		others.failures += out[i].failures
	}
	d := &out[DefaultCriticality.index()]
	d.successes = atomicMax(&l.defaultTotals[0], all.successes-others.successes)
	d.failures = atomicMax(&l.defaultTotals[1], all.failures-others.failures)
	d.drops = atomicMax(&l.defaultTotals[2], all.drops-others.drops)
	return out
}

// atomicMax raises v to n if n is higher, and returns v's value then.
func atomicMax(v *atomic.Int64, n int64) int64 {
	for {
		old := v.Load()
		if n <= old {
			return old
		}
		if v.CompareAndSwap(old, n) {
			return n
		}
	}
}
