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

// levelWindows counts, per level other than the default, the calls asked
// in the window: Add(1) for a dropped call, Add(0) for an admitted one. The
// default level's calls are what remains of all the calls (admitted and
// dropped), so that calls without a criticality cost nothing more. The
// windows are made at the first call that names another level; until then
// the breaker drops exactly as one without criticality.
type levelWindows struct {
	calls atomic.Pointer[[criticalities]*rollingwindow.RollingWindow[int64]]

	// What a window is made of, kept from New.
	size int
	span time.Duration
	opts []rollingwindow.Option
}

func (l *levelWindows) init(size int, span time.Duration, opts []rollingwindow.Option) {
	l.size, l.span, l.opts = size, span, opts
}

// windows returns the windows, making them if need be.
func (l *levelWindows) windows() *[criticalities]*rollingwindow.RollingWindow[int64] {
	if w := l.calls.Load(); w != nil {
		return w
	}
	w := new([criticalities]*rollingwindow.RollingWindow[int64])
	for i := range w {
		if Sheddable+Criticality(i) != DefaultCriticality {
			// The sizes were validated with the breaker's own windows.
			w[i], _ = rollingwindow.New[int64](l.size, l.span, l.opts...)
		}
	}
	if l.calls.CompareAndSwap(nil, w) {
		return w
	}
	return l.calls.Load()
}

// counts returns the calls and the drops of each level in the window at t,
// lowest level first, given the breaker's admitted calls and drops then.
// The default level gets what the others leave, never below 0.
func (l *levelWindows) counts(w *[criticalities]*rollingwindow.RollingWindow[int64], t time.Time,
	admitted, drops int64) (calls, dropped [criticalities]int64) {
	def := DefaultCriticality.index()
	otherCalls, otherDrops := int64(0), int64(0)
	for i, win := range w {
		if win == nil {
			continue
		}
		dropped[i], calls[i] = win.TotalsAt(t)
		otherCalls += calls[i]
		otherDrops += dropped[i]
	}
	calls[def] = max(0, admitted+drops-otherCalls)
	dropped[def] = max(0, drops-otherDrops)
	return calls, dropped
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

// levelProbability returns the drop probability of a call at level c, given
// the formula's ratio num/den (num > 0), at time t.
func (b *googleBreaker) levelProbability(w *[criticalities]*rollingwindow.RollingWindow[int64], c Criticality,
	t time.Time, num, den float64) float64 {
	_, admitted := b.outcomes.TotalsAt(t)
	drops, _ := b.drops.TotalsAt(t)
	calls, _ := b.levels.counts(w, t, admitted, drops)
	return levelProbabilities(b.formula.probability(num, den), calls)[c.index()]
}

// dropsDefault reports whether a call at the default level is dropped,
// given the formula's ratio num/den (num > 0) at time t. Without calls at
// other levels it is the formula's own draw, exactly as without
// criticality.
func (b *googleBreaker) dropsDefault(t time.Time, num, den float64) bool {
	w := b.levels.calls.Load()
	if w == nil {
		return b.formula.drops(num, den, b.proba.Float64())
	}
	return b.proba.Float64() < b.levelProbability(w, DefaultCriticality, t, num, den)
}

// admitLevel is admit for a call at level c, other than the default: the
// formula's drops are placed from the lowest level up.
func (b *googleBreaker) admitLevel(c Criticality) error {
	if !c.Valid() {
		return b.admit()
	}
	w := b.levels.windows()
	t := b.now()
	tl := b.tally(t)
	num, den := b.formula.ratio(tl)
	if b.events != nil {
		b.events.observe(b, t, num, den)
	}
	if num == 0 {
		w[c.index()].AddAt(t, 0)
		return nil
	}
	p := b.levelProbability(w, c, t, num, den)
	if !(b.proba.Float64() < p) {
		w[c.index()].AddAt(t, 0)
		return nil
	}
	w[c.index()].AddAt(t, 1)
	b.drops.AddAt(t, 1)
	if b.events != nil && b.events.drops {
		b.events.dropped(b, p)
	}
	return b.reasons.err(b.name)
}

// allowAs is Allow for a call at level c.
func (b *googleBreaker) allowAs(c Criticality) (srebreaker.Promise, error) {
	if c == DefaultCriticality {
		return b.Allow()
	}
	if err := b.admitLevel(c); err != nil {
		return nil, err
	}
	return promise{b}, nil
}

// CriticalityStats is what a breaker's window holds of one level; see
// [Stats].
type CriticalityStats struct {
	// Criticality is the level.
	Criticality Criticality
	// Calls are the calls asked at this level in the window, admitted or
	// dropped (for the default level: every call not counted at another
	// level), and Drops those of them that were dropped.
	Calls, Drops int64
	// DropProbability is the probability that a call of this level asking
	// now is dropped.
	DropProbability float64
}

// levelStats returns the per-level part of a snapshot at t, highest level
// first, given the breaker's admitted calls and drops in the window and its
// overall drop probability p.
func (b *googleBreaker) levelStats(t time.Time, admitted, drops int64, p float64) [criticalities]CriticalityStats {
	var out [criticalities]CriticalityStats
	var calls, dropped [criticalities]int64
	w := b.levels.calls.Load()
	if w != nil {
		calls, dropped = b.levels.counts(w, t, admitted, drops)
	} else {
		calls[DefaultCriticality.index()] = admitted + drops
		dropped[DefaultCriticality.index()] = drops
	}
	probs := levelProbabilities(p, calls)
	for i := range out {
		j := criticalities - 1 - i
		out[i] = CriticalityStats{Criticality: Sheddable + Criticality(j), Calls: calls[j], Drops: dropped[j],
			DropProbability: probs[j]}
	}
	return out
}
