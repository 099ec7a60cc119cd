package breaker

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/evidence"
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

// level is what a breaker keeps of one level: its live bucket and its
// history, judged as the breaker's own.
type level struct {
	counts   *counts
	history  evidence.History // guarded by the breaker's mu
	lifetime evidence.Bucket  // guarded by the breaker's mu
}

// levels holds every level, lowest first, made at the first call that names
// a level other than the default; until then the breaker drops exactly as
// one without criticality. The default level counts on the breaker's own
// live bucket, so that calls without a criticality cost nothing more.
type levels [criticalities]*level

// makeLevels returns the breaker's levels, making them if need be: the
// default level starts with the breaker's history, the others empty.
func (b *googleBreaker) makeLevels() *levels {
	if lv := b.levels.Load(); lv != nil {
		return lv
	}
	b.mu.Lock()
	lv := b.levels.Load()
	if lv == nil {
		lv = new(levels)
		for i := range lv {
			x := &level{}
			if i == DefaultCriticality.index() {
				x.counts = &b.counts
				x.history = b.history.Clone()
				x.lifetime = b.lifetime
			} else {
				x.counts = new(counts)
				x.counts.init(b)
				x.history.Reset(b.settings)
			}
			lv[i] = x
		}
		b.levels.Store(lv)
		b.judgeFinishedLocked()
	}
	b.mu.Unlock()
	b.judge()
	return lv
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
// when more, the level's own judgement, for a level whose calls fail
// clearly more often than the breaker's as a whole (their failure ratio
// more than halfway from the breaker's to 1). As the SRE book keeps
// statistics per criticality, a level that the dependency itself sheds (a
// server that sheds the lowest levels first) is then shed as a failing
// dependency would be, rather than spend the formula's K attempts per
// success on calls bound to fail; a dependency that fails every level
// alike leaves the placement from the lowest level up as it is. A level is
// judged on its own even while the breaker as a whole drops nothing: the
// other levels' successes must not readmit calls bound to fail.
func (b *googleBreaker) levelDropProbabilities(p float64, j *judgement,
	lives *[criticalities]evidence.Bucket) [criticalities]float64 {
	var calls [criticalities]int64
	var all evidence.Bucket
	windows := [criticalities]evidence.Bucket{}
	for i := range windows {
		windows[i] = j.levels[i].Window.Plus(lives[i])
		calls[i] = windows[i].Admitted() + windows[i].Drops
		all = all.Plus(windows[i])
	}
	probs := levelProbabilities(p, calls)
	if all.Failures == 0 {
		return probs
	}
	total := float64(all.Admitted())
	for i, w := range windows {
		if !(2*float64(w.Failures)*total > float64(w.Admitted())*(total+float64(all.Failures))) {
			continue
		}
		num, den := b.settings.Ratio(&j.levels[i], lives[i])
		probs[i] = max(probs[i], b.settings.Probability(num, den))
	}
	return probs
}

// allowAs is Allow for a call at level c.
func (b *googleBreaker) allowAs(c Criticality) (srebreaker.Promise, error) {
	if c == DefaultCriticality || !c.Valid() {
		return b.Allow()
	}
	i := c.index()
	lv := b.levels.Load()
	if lv == nil {
		lv = b.makeLevels()
	}
	s, err := b.admit(lv[i].counts, i)
	if err != nil {
		return nil, err
	}
	return promise{s}, nil
}

// CriticalityStats is what a breaker's window holds of one level; see
// [Stats].
type CriticalityStats struct {
	// Criticality is the level.
	Criticality Criticality
	// Calls are the calls of this level in the window, admitted calls
	// that finished and dropped ones; Drops are those that were dropped,
	// Successes and Failures the admitted ones, by outcome.
	Calls, Drops, Successes, Failures int64
	// DropProbability is the probability that a call of this level asking
	// now is dropped.
	DropProbability float64

	// TotalSuccesses, TotalFailures and TotalDrops count the same as
	// Successes, Failures and Drops since the breaker was made; they only
	// grow, and the four levels add up to the breaker's totals.
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

// levelStats returns the per-level part of a snapshot, highest level
// first, given the breaker's judgement, each level's live bucket and
// lifetime figures, and its overall drop probability p.
func (b *googleBreaker) levelStats(j *judgement, lives, lifetimes *[criticalities]evidence.Bucket,
	p float64) [criticalities]CriticalityStats {
	var windows [criticalities]evidence.Bucket
	var probs [criticalities]float64
	if j.levels != nil {
		for i := range windows {
			windows[i] = j.levels[i].Window.Plus(lives[i])
		}
		probs = b.levelDropProbabilities(p, j, lives)
	} else {
		d := DefaultCriticality.index()
		windows[d] = j.sum.Window.Plus(lives[d])
		probs[d] = p
	}
	var out [criticalities]CriticalityStats
	for i := range out {
		k := criticalities - 1 - i
		w, life := windows[k], lifetimes[k]
		out[i] = CriticalityStats{Criticality: Sheddable + Criticality(k), Calls: w.Admitted() + w.Drops,
			Drops: w.Drops, Successes: w.Successes, Failures: w.Failures, DropProbability: probs[k],
			TotalSuccesses: life.Successes, TotalFailures: life.Failures, TotalDrops: life.Drops}
	}
	return out
}

// others returns the live buckets of the levels other than the default,
// added up.
func (lv *levels) others() evidence.Bucket {
	var all evidence.Bucket
	for i, x := range lv {
		if i != DefaultCriticality.index() {
			all = all.Plus(x.counts.sum())
		}
	}
	return all
}
