package breaker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/internal/tuning"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/proba"
)

// Breaker guards calls to one dependency. Its first methods are those of
// go-zero's core/breaker, so that code written for it moves over with a
// change of import path; the last four read the breaker ([Breaker.Stats])
// and let an operator take it in hand ([Breaker.SetOverride]). A breaker
// shares its fleet's history through package fleet (fleet.Of) and keeps
// the retry budget of package retry, whose use [Stats] reports.
//
// Every Do method runs req only if the breaker admits the call, and then
// returns req's error untouched; the acceptable function (or
// [srebreaker.DefaultAcceptable] when it is nil) decides whether that error
// counts as a success or a failure. A panic in req or in acceptable is
// recorded as a failure and raised again with the same value. A dropped
// call returns an error matching [ErrServiceUnavailable], or what fallback
// returns when one is given, and is recorded as neither; fallback gets that
// error and is never called for an admitted call. A nil fallback means
// none, as in go-zero: the dropped call returns the error.
//
// A nil req is the caller's mistake, not the dependency's: the method
// panics with a message naming itself and the nil argument, before it
// asks the breaker, so that nothing is admitted or recorded.
//
// The Ctx methods return ctx.Err() without running anything or recording
// anything when ctx is already done. When req returns an error matching
// context.Canceled and ctx has been canceled, the caller gave up: the call
// is recorded as neither a success nor a failure. context.DeadlineExceeded is
// left to acceptable, and with the default counts as a failure: the
// dependency was too slow. A nil ctx is treated as context.Background().
// The Ctx methods ask at the criticality ctx carries, if any (package
// criticality): the breaker drops the lowest levels first.
//
// A Breaker is safe for concurrent use by multiple goroutines.
type Breaker interface {
	// Name returns the breaker's name.
	Name() string

	// Allow asks to make a call. If the breaker admits it, Allow returns a
	// promise on which the caller reports the outcome, exactly once. If it
	// drops it, Allow returns a nil promise and an error matching
	// [ErrServiceUnavailable].
	Allow() (srebreaker.Promise, error)
	// AllowCtx is Allow, returning ctx.Err() when ctx is already done.
	AllowCtx(ctx context.Context) (srebreaker.Promise, error)

	// Do runs req if the breaker admits it; only a nil error is a success.
	Do(req func() error) error
	// DoCtx is Do with the context rules above.
	DoCtx(ctx context.Context, req func() error) error

	// DoWithAcceptable runs req if the breaker admits it; acceptable decides
	// whether its error counts as a success.
	DoWithAcceptable(req func() error, acceptable srebreaker.Acceptable) error
	// DoWithAcceptableCtx is DoWithAcceptable with the context rules above.
	DoWithAcceptableCtx(ctx context.Context, req func() error, acceptable srebreaker.Acceptable) error

	// DoWithFallback runs req if the breaker admits it, and fallback if it
	// drops it.
	DoWithFallback(req func() error, fallback func(err error) error) error
	// DoWithFallbackCtx is DoWithFallback with the context rules above.
	DoWithFallbackCtx(ctx context.Context, req func() error, fallback func(err error) error) error

	// DoWithFallbackAcceptable runs req if the breaker admits it, and
	// fallback if it drops it; acceptable decides whether req's error counts
	// as a success.
	DoWithFallbackAcceptable(req func() error, fallback func(err error) error,
		acceptable srebreaker.Acceptable) error
	// DoWithFallbackAcceptableCtx is DoWithFallbackAcceptable with the
	// context rules above.
	DoWithFallbackAcceptableCtx(ctx context.Context, req func() error, fallback func(err error) error,
		acceptable srebreaker.Acceptable) error

	// Stats returns a snapshot of the breaker: what its window holds, what
	// it has counted since it was made, its drop probability, its last
	// failure reasons and the override in force. Like a call, it reads the
	// clock and finishes the buckets that have ended, so a breaker that is
	// only polled still tells its listeners of a change of shedding. It
	// allocates the Reasons slice and takes the breaker's lock for a
	// moment, never delaying calls for longer.
	Stats() Stats

	// SetOverride sets an operator's override ([override.Spec]) in place of
	// any the breaker holds: it drops or admits every call until o.TTL has
	// passed on the breaker's clock, or ClearOverride. It returns an error
	// wrapping [ErrInvalidOverride], naming the field and its value, when
	// o.Mode is neither override.ShedAll nor override.ShedNone or o.TTL is
	// not above 0 and at most [override.MaxTTL] (Reason and By are cut to
	// their bound, not refused), and one wrapping [ErrNotOverridable] for a
	// breaker that records nothing ([Nop]). docs/guide/overrides.md has the
	// operator's guide.
	SetOverride(o override.Spec) error
	// ClearOverride ends the override, if one is in force; otherwise it
	// does nothing.
	ClearOverride()
	// Override returns the override in force, if any.
	Override() (o override.Active, ok bool)
}

// New returns a breaker configured by opts, or an error wrapping
// [ErrInvalidOption] that names the first invalid option and its value.
func New(opts ...Option) (Breaker, error) {
	o := newOptions(opts)
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.name == "" {
		o.name = randomName()
	}
	o.name = ownName(o.name)
	return newGoogleBreaker(o), nil
}

// MustNew is like [New] but panics, with the message New would return, when
// an option is invalid. It is meant for options written in code.
func MustNew(opts ...Option) Breaker {
	b, err := New(opts...)
	if err != nil {
		panic(err.Error())
	}
	return b
}

func randomName() string {
	return fmt.Sprintf("breaker-%016x", rand.Uint64())
}

// googleBreaker is the SRE adaptive throttling breaker. The call path reads
// mode and, while it is not 0, the drop probability of the call's level;
// it writes one counter of the live bucket. Everything else is made when a
// bucket finishes (advance) or when the live bucket changes the judgement
// (judge).
type googleBreaker struct {
	name     string
	settings evidence.Settings
	// overloadSettings are settings with Overloaded set and an
	// aggression of at most tuning.OverloadAggression, judged by while
	// the window holds an overload rejection (see overloadedAt).
	overloadSettings evidence.Settings
	proba            *proba.Proba // nil: calls draw from math/rand/v2
	span             int64        // a bucket, in ns
	window           int64        // the window, in ns

	// Read on every call.
	mode      atomic.Uint32 // see modeFailing; 0 while nothing can be dropped
	bucketEnd atomic.Int64  // when the live bucket ends, on the breaker's time axis (now)
	// probs holds each level's drop probability (float64 bits), lowest
	// level first; only the default level's until a call names another.
	probs  [criticality.Levels]atomic.Uint64
	counts counts // the default level's live bucket
	levels atomic.Pointer[levels]

	// judged is the judgement of the finished buckets, made when a bucket
	// finishes; immutable.
	judged atomic.Pointer[judgement]

	mu       sync.Mutex
	history  evidence.History // guarded by mu; every level's calls together
	lifetime evidence.Bucket  // guarded by mu; every finished bucket's calls
	live     int64            // guarded by mu; the live bucket's number
	// unadmitted is how many finished buckets in a row, the newest last,
	// admitted no call: when the settings' ProbeDue finds it due while
	// calls are dropped, modeProbe is set (pace.go). Guarded by mu.
	unadmitted int64

	// overloadedAt is 1 + the number of the newest bucket in which the
	// dependency rejected a call for overload (RejectOverloaded); 0 before
	// the first.
	overloadedAt atomic.Int64

	reasons reasonLog
	events  *events // nil without listeners
	fleet   fleetLink
	retries retryTally // the retry budget's count (budget.go)
	hang    hangWatch  // when a call out counts against the dependency (hang.go)

	override overrideSlot // an operator's override, read while modeOverride is set (override.go)
	overload overloadSlot // a server's overload limit under the same name (overload.go)

	// clock is nil for the system clock, read through its monotonic
	// reading alone; otherwise the clock given by WithClock.
	clock clock.Clock
	// start is the instant the breaker's time axis counts from.
	start atomic.Pointer[time.Time]
}

// The bits of googleBreaker.mode.
const (
	// modeFailing: the window holds a failure, so a call may be dropped.
	modeFailing uint32 = 1 << iota
	// modeFleet: the breaker holds its fleet's history, which may drop a
	// call whatever its own window holds.
	modeFleet
	// modeShedding: the newest judgement drops calls: each success is
	// judged, so that shedding stops with the success that ends it.
	modeShedding
	// modeOverride: an operator's override may be in force (override.go).
	modeOverride
	// modeProbe: the next call to be dropped is admitted instead, and
	// clears it (pace.go).
	modeProbe
	// modePaced: calls are dropped with no draw, but for the paced ones
	// modeProbe admits (pace.go).
	modePaced
)

// judgement is what a breaker made of its finished buckets when the
// newest of them finished.
type judgement struct {
	sum    evidence.Summary                      // every level's calls together
	levels *[criticality.Levels]evidence.Summary // each level's, once a call named one
}

func newGoogleBreaker(o options) *googleBreaker {
	b := &googleBreaker{
		name:     o.name,
		settings: o.settings(),
		proba:    o.proba,
		span:     int64(o.window / time.Duration(o.buckets)),
		window:   int64(o.window),
	}
	// While the dependency says it is overloaded, the book's formula
	// with every drop counted, and an aggression of at most
	// tuning.OverloadAggression: a little under K calls per success.
	b.overloadSettings = b.settings
	b.overloadSettings.Overloaded = true
	b.overloadSettings.Aggression = min(b.settings.Aggression, tuning.OverloadAggression)
	b.clock = o.clock
	start := b.wallNow()
	b.start.Store(&start)
	b.counts.init(b)
	b.hang.init(time.Duration(b.span), o.slowCall, o.plain)
	b.history.Reset(b.settings)
	b.bucketEnd.Store(b.span)
	b.judged.Store(&judgement{})
	if len(o.listeners) > 0 {
		b.events = newEvents(o, time.Duration(b.span))
	}
	return b
}

// judgeFinishedLocked judges the finished buckets and sets mode from them.
// Callers hold b.mu.
func (b *googleBreaker) judgeFinishedLocked() {
	j := &judgement{sum: b.history.Summarize()}
	if lv := b.levels.Load(); lv != nil {
		j.levels = new([criticality.Levels]evidence.Summary)
		for i, x := range lv {
			j.levels[i] = x.history.Summarize()
		}
	}
	b.judged.Store(j)
	b.judgeFleetLocked() // fleet.go
	if j.sum.Window.Failures > 0 || b.hang.hanging.Load() {
		b.setMode(modeFailing)
	} else {
		b.clearMode(modeFailing)
	}
	// A failure recorded in the live bucket meanwhile saw the old mode:
	// look again, after the store.
	if b.liveFailures() {
		b.setMode(modeFailing)
	}
}

// liveFailures reports whether the live bucket holds a failure.
func (b *googleBreaker) liveFailures() bool {
	if lv := b.levels.Load(); lv != nil {
		for _, x := range lv {
			if x.counts.sum().Failures > 0 {
				return true
			}
		}
		return false
	}
	return b.counts.sum().Failures > 0
}

// clearMode clears bits in mode.
func (b *googleBreaker) clearMode(bits uint32) {
	for {
		old := b.mode.Load()
		if old&bits == 0 || b.mode.CompareAndSwap(old, old&^bits) {
			return
		}
	}
}

// setMode sets bits in mode.
func (b *googleBreaker) setMode(bits uint32) {
	for {
		old := b.mode.Load()
		if old&bits == bits || b.mode.CompareAndSwap(old, old|bits) {
			return
		}
	}
}

func (b *googleBreaker) Name() string { return b.name }
