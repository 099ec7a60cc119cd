package breaker

import (
	"context"
	"errors"
	"math"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/drophook"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/internal/levelhook"
)

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
type levels [criticality.Levels]*level

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
			if i == criticality.Default.Index() {
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
func levelProbabilities(p float64, calls [criticality.Levels]int64) (probs [criticality.Levels]float64) {
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
	lives *[criticality.Levels]evidence.Bucket) [criticality.Levels]float64 {
	var calls [criticality.Levels]int64
	var all evidence.Bucket
	windows := [criticality.Levels]evidence.Bucket{}
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
	settings := b.judging()
	for i, w := range windows {
		if !(2*float64(w.Failures)*total > float64(w.Admitted())*(total+float64(all.Failures))) {
			continue
		}
		num, den := settings.Ratio(&j.levels[i], lives[i])
		probs[i] = max(probs[i], settings.Probability(num, den))
	}
	return probs
}

// admitAs is admit for a call at level c: on the breaker's own counts at
// the default level (or a level that is not one), else on the level's.
func (b *googleBreaker) admitAs(c criticality.Level) (*cohort, error) {
	if c == criticality.Default || !c.Valid() {
		return b.admit(&b.counts, criticality.Default.Index())
	}
	lv := b.levels.Load()
	if lv == nil {
		lv = b.makeLevels()
	}
	i := c.Index()
	return b.admit(lv[i].counts, i)
}

// AllowCtx asks at the level ctx carries (criticality.From). It is
// admitAs written out, which saves a call on every call at a level.
func (b *googleBreaker) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	if ctx == nil {
		return b.Allow()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := criticality.From(ctx)
	var co *cohort
	var err error
	if c == criticality.Default || !c.Valid() {
		co, err = b.admit(&b.counts, criticality.Default.Index())
	} else {
		lv := b.levels.Load()
		if lv == nil {
			lv = b.makeLevels()
		}
		i := c.Index()
		co, err = b.admit(lv[i].counts, i)
	}
	if err != nil {
		b.traceDrop(ctx, c, err, false)
		return nil, err
	}
	return promise{co}, nil
}

// allowAt is AllowCtx for a call at level c, whatever ctx carries (see
// package levelhook).
func (b *googleBreaker) allowAt(ctx context.Context, c criticality.Level) (srebreaker.Promise, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	co, err := b.admitAs(c)
	if err != nil {
		b.traceDrop(ctx, c, err, false)
		return nil, err
	}
	return promise{co}, nil
}

// Leveled reports whether the breaker has counted a call at a level other
// than [criticality.Default] since it was made: an admitted call that
// finished or a dropped one. Until then every call counts at the default
// level, and exporters leave the per-level figures out.
func (s Stats) Leveled() bool {
	for _, c := range s.Criticalities {
		if c.Level != criticality.Default && c.TotalSuccesses+c.TotalFailures+c.TotalDrops > 0 {
			return true
		}
	}
	return false
}

// levelStats returns the per-level part of a snapshot, highest level
// first, given the breaker's judgement, each level's live bucket and
// lifetime figures, and its overall drop probability p.
func (b *googleBreaker) levelStats(j *judgement, lives, lifetimes *[criticality.Levels]evidence.Bucket,
	p float64) [criticality.Levels]criticality.Stats {
	var windows [criticality.Levels]evidence.Bucket
	var probs [criticality.Levels]float64
	if j.levels != nil {
		for i := range windows {
			windows[i] = j.levels[i].Window.Plus(lives[i])
		}
		probs = b.levelDropProbabilities(p, j, lives)
	} else {
		d := criticality.Default.Index()
		windows[d] = j.sum.Window.Plus(lives[d])
		probs[d] = p
	}
	var out [criticality.Levels]criticality.Stats
	for i := range out {
		k := criticality.Levels - 1 - i
		w, life := windows[k], lifetimes[k]
		out[i] = criticality.Stats{Level: criticality.Sheddable + criticality.Level(k), Calls: w.Admitted() + w.Drops,
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
		if i != criticality.Default.Index() {
			all = all.Plus(x.counts.sum())
		}
	}
	return all
}

// traceDrop tells the drop hook (package drophook, which otelbreaker
// sets) of a call at level c, with context ctx, that the breaker dropped
// with err, and whether a fallback serves it, and notes the drop in the
// chain.Mark of ctx, if it holds one. Without a hook it costs a context
// lookup and a load, on the drop's path alone.
func (b *googleBreaker) traceDrop(ctx context.Context, c criticality.Level, err error, fallback bool) {
	chain.Failed(ctx, b) // a request this call is made for fails by this breaker's drop: see package chain
	h := drophook.Load()
	if h == nil {
		return
	}
	if !c.Valid() {
		c = criticality.Default
	}
	d := drophook.Drop{Breaker: b.name, Criticality: c, Reason: b.reasons.newest(), Err: err,
		Forced: errors.Is(err, ErrForced), Fallback: fallback}
	if d.Forced {
		d.Probability = 1
	} else {
		d.Probability = math.Float64frombits(b.probs[c.Index()].Load())
	}
	h(ctx, d)
}

func init() {
	levelhook.Allow = func(b any, ctx context.Context, c criticality.Level) (srebreaker.Promise, bool, error) {
		g, ok := b.(*googleBreaker)
		if !ok || ctx == nil {
			return nil, false, nil
		}
		p, err := g.allowAt(ctx, c)
		return p, true, err
	}
	drophook.Dropped = func(b any, ctx context.Context, err error) {
		if g, ok := b.(*googleBreaker); ok && ctx != nil {
			g.traceDrop(ctx, criticality.Default, err, false)
		} else if n, ok := b.(chain.Namer); ok { // a Breaker that wraps one of ours
			chain.Failed(ctx, n)
		}
	}
}
