package breaker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/rollingwindow"
)

// Fallback is called instead of a request that the breaker dropped, with an
// error that matches [ErrServiceUnavailable]; what it returns is what the
// Do call returns. It is never called for a call that was admitted.
type Fallback func(err error) error

// Breaker guards calls to one dependency. Its method set is that of go-zero's
// core/breaker.
//
// Every Do method runs req only if the breaker admits the call, and then
// returns req's error untouched; the acceptable function (or
// [srebreaker.DefaultAcceptable]) decides whether that error counts as a
// success or a failure. A panic in req or in acceptable is recorded as a
// failure and raised again with the same value. A dropped call returns an
// error matching [ErrServiceUnavailable], or what fallback returns when one
// is given, and is recorded as neither.
//
// The Ctx methods return ctx.Err() without running anything or recording
// anything when ctx is already done. When req returns an error matching
// context.Canceled and ctx has been canceled, the caller gave up: the call
// is recorded as neither a success nor a failure. context.DeadlineExceeded is
// left to acceptable, and with the default counts as a failure: the
// dependency was too slow. A nil ctx is treated as context.Background().
// The Ctx methods ask at the [Criticality] ctx carries, if any: the breaker
// drops the lowest levels first.
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
	DoWithFallback(req func() error, fallback Fallback) error
	// DoWithFallbackCtx is DoWithFallback with the context rules above.
	DoWithFallbackCtx(ctx context.Context, req func() error, fallback Fallback) error

	// DoWithFallbackAcceptable runs req if the breaker admits it, and
	// fallback if it drops it; acceptable decides whether req's error counts
	// as a success.
	DoWithFallbackAcceptable(req func() error, fallback Fallback, acceptable srebreaker.Acceptable) error
	// DoWithFallbackAcceptableCtx is DoWithFallbackAcceptable with the
	// context rules above.
	DoWithFallbackAcceptableCtx(ctx context.Context, req func() error, fallback Fallback,
		acceptable srebreaker.Acceptable) error
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

// googleBreaker is the SRE adaptive throttling breaker.
type googleBreaker struct {
	name    string
	formula formula
	proba   *proba.Proba
	// outcomes holds the admitted calls: Add(1) for a success, Add(0) for a
	// failure, so that its sum is the successes and its count the calls.
	outcomes *rollingwindow.RollingWindow[int64]
	// drops holds the dropped calls, one Add(1) each.
	drops   *rollingwindow.RollingWindow[int64]
	streaks streaks // runs of agreeing finished buckets and the newest one, for trustRecent
	reach   *reach  // older outcomes, for WithEvidence; nil without
	reasons reasonLog
	events  *events      // nil without listeners
	levels  levelWindows // calls by criticality (criticality.go)
	fleet   fleetLink

	// clock is nil for the system clock, read through its monotonic
	// reading alone; otherwise the clock given by WithClock.
	clock Clock
	// start is the instant the windows' offsets count from, on the system
	// clock; a clock given by WithClock is read through the outcomes
	// window's offsets, which survive leaps of centuries.
	start time.Time
}

func newGoogleBreaker(o options) *googleBreaker {
	b := &googleBreaker{
		name: o.name,
		formula: formula{
			k:           o.k,
			protection:  float64(o.protection),
			aggression:  o.aggression,
			countDrops:  o.countDrops,
			trustRecent: o.trustRecent,
			evidence:    int64(o.evidence),
			buckets:     int64(o.buckets),
		},
		proba: o.proba,
	}
	var windowOpts []rollingwindow.Option
	if _, system := o.clock.(realClock); !system {
		b.clock = o.clock
		windowOpts = append(windowOpts, rollingwindow.WithClock(o.clock))
	}
	b.start = b.wallNow()
	windowOpts = append(windowOpts, rollingwindow.WithStart(b.start))
	b.fleet.window = o.window
	span := o.window / time.Duration(o.buckets)
	b.streaks.size = int64(o.buckets)
	if o.evidence > 0 {
		b.reach = newReach(o.buckets, span, o.horizonOrDefault())
	}
	// The options were validated: New cannot fail. Each window gets its
	// own copy of the options, and only the outcomes and drops windows
	// report their finished buckets.
	b.levels.init(o.buckets, span, slices.Clip(windowOpts))
	b.outcomes, _ = rollingwindow.New[int64](o.buckets, span,
		append(slices.Clip(windowOpts), rollingwindow.OnBucketDone(b.bucketDone))...)
	b.drops, _ = rollingwindow.New[int64](o.buckets, span,
		append(slices.Clip(windowOpts), rollingwindow.OnBucketDone(b.dropsDone))...)
	if len(o.listeners) > 0 {
		b.events = newEvents(o, span)
	}
	return b
}

// now returns the time the windows run on, as an offset from the outcomes
// window's start. On the system clock it reads the monotonic clock alone
// (time.Since), which costs about half of time.Now, and needs no
// conversion from a time.Time.
func (b *googleBreaker) now() time.Duration {
	if b.clock == nil {
		return time.Since(b.start)
	}
	return b.clockNow()
}

// clockNow is now on a clock given by WithClock.
func (b *googleBreaker) clockNow() time.Duration { return b.outcomes.Offset(b.clock.Now()) }

// wallNow returns the time a failure reason or an event is stamped with.
func (b *googleBreaker) wallNow() time.Time {
	if b.clock == nil {
		return time.Now()
	}
	return b.clock.Now()
}

func (b *googleBreaker) Name() string { return b.name }

// tally reads what the formula needs at offset t.
func (b *googleBreaker) tally(t time.Duration) tally {
	done, cur := b.outcomes.PartsAtOffset(t)
	return b.tallyFrom(t, done, cur)
}

// tallyFrom is tally given the outcomes window's parts at t. A window
// without failures is read no further: the formula drops nothing then,
// whatever the drops and the newest buckets hold (see formula.ratio).
func (b *googleBreaker) tallyFrom(t time.Duration, done, cur rollingwindow.Bucket[int64]) tally {
	successes := done.Sum + cur.Sum
	c := tally{successes: successes, failures: done.Count + cur.Count - successes}
	if c.failures == 0 {
		return c
	}
	if b.formula.trustRecent {
		c.recentSuccesses, c.recentFailures = b.streaks.recent(cur.Sum, cur.Count-cur.Sum)
		c.downBuckets = b.streaks.downBuckets.Load()
		c.recovering = b.streaks.recovering.Load()
		if c.recentSuccesses == 0 && c.recentFailures == 0 {
			// The newest buckets agree on neither outcome: the formula may
			// judge them alone (formula.shifted). A run, agreeing, holds
			// them all, and no more than protection of them.
			c.newestSuccesses, c.newestFailures = b.streaks.newestBucket(cur.Sum, cur.Count-cur.Sum)
		}
	}
	if b.formula.countDrops {
		doneDrops, curDrops := b.drops.PartsAtOffset(t)
		c.drops = doneDrops.Count + curDrops.Count
		if c.newestSuccesses+c.newestFailures > 0 {
			c.newestDrops = b.streaks.newestDrops.Load() + curDrops.Count
		}
	}
	b.readReach(t, cur, &c)
	return c
}

// admit decides whether to admit a call: nil if admitted, the drop error if
// not. A window without failures admits at once: the formula drops nothing
// then (see formula.ratio); that is the common case, kept to one read of
// the clock and of the outcomes window.
func (b *googleBreaker) admit() error {
	t := b.now()
	done, cur := b.outcomes.PartsAtOffset(t)
	if done.Sum == done.Count && cur.Sum == cur.Count && b.events == nil && b.fleet.others.Load() == nil {
		return nil
	}
	c := b.tallyFrom(t, done, cur)
	return b.decide(t, &c)
}

// decide is admit for a window with failures, or a breaker with listeners
// or a fleet's counts.
func (b *googleBreaker) decide(t time.Duration, c *tally) error {
	num, den := b.formula.ratio(c)
	if o := b.fleet.others.Load(); o != nil { // see fleet.go
		num, den = b.withFleet(o, t, c.failures, num, den)
	}
	if b.events != nil {
		b.events.observe(b, t, num, den)
	}
	if num == 0 || !b.dropsDefault(t, c, num, den) { // the formula's draw, unless calls name a criticality
		return nil
	}
	if b.formula.countDrops && c.failures > 0 { // tallyFrom brought the drops window to t
		b.drops.AddCurrent(1)
	} else {
		b.drops.AddAtOffset(t, 1)
	}
	b.streaks.sawDrop()
	if b.events != nil && b.events.drops {
		b.events.dropped(b, b.formula.probability(num, den))
	}
	return b.reasons.err(b.name)
}

func (b *googleBreaker) markSuccess() { b.outcomes.AddCurrent(1) }

func (b *googleBreaker) markFailure(reason string) {
	b.outcomes.AddCurrent(0)
	b.reasons.add(b.wallNow(), reason)
}

// promise is pointer-shaped, so returning it as a srebreaker.Promise does
// not allocate.
type promise struct{ b *googleBreaker }

func (p promise) Accept()              { p.b.markSuccess() }
func (p promise) Reject(reason string) { p.b.markFailure(reason) }

// Ignore records nothing: the call says nothing about the dependency's
// health (see [srebreaker.Ignorer]), so it leaves the window as if the call
// had never been admitted.
func (p promise) Ignore() {}

var _ srebreaker.Ignorer = promise{}

func (b *googleBreaker) Allow() (srebreaker.Promise, error) {
	if err := b.admit(); err != nil {
		return nil, err
	}
	return promise{b}, nil
}

func (b *googleBreaker) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	return b.allowAs(CriticalityFrom(ctx))
}

// Do is do at the default level, written out: it is the most common call,
// and one call less is a tenth of its cost.
func (b *googleBreaker) Do(req func() error) error {
	state, err := b.run(context.Background(), req, nil, nil)
	if state == nilPanic {
		panic(nil) // raised again: see recordPanic
	}
	return err
}

func (b *googleBreaker) DoCtx(ctx context.Context, req func() error) error {
	return b.doCtx(ctx, req, nil, nil)
}

func (b *googleBreaker) DoWithAcceptable(req func() error, acceptable srebreaker.Acceptable) error {
	return b.do(context.Background(), DefaultCriticality, req, nil, acceptable)
}

func (b *googleBreaker) DoWithAcceptableCtx(ctx context.Context, req func() error,
	acceptable srebreaker.Acceptable) error {
	return b.doCtx(ctx, req, nil, acceptable)
}

func (b *googleBreaker) DoWithFallback(req func() error, fallback Fallback) error {
	return b.do(context.Background(), DefaultCriticality, req, fallback, nil)
}

func (b *googleBreaker) DoWithFallbackCtx(ctx context.Context, req func() error, fallback Fallback) error {
	return b.doCtx(ctx, req, fallback, nil)
}

func (b *googleBreaker) DoWithFallbackAcceptable(req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	return b.do(context.Background(), DefaultCriticality, req, fallback, acceptable)
}

func (b *googleBreaker) DoWithFallbackAcceptableCtx(ctx context.Context, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	return b.doCtx(ctx, req, fallback, acceptable)
}

// outcome is what a finished call is recorded as.
type outcome int

const (
	success outcome = iota
	failure
	neither // the caller gave up: the dependency is not to blame
)

// doCtx is do for the Ctx methods: a ctx already done returns its error
// before anything is admitted or recorded.
func (b *googleBreaker) doCtx(ctx context.Context, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return b.do(ctx, CriticalityFrom(ctx), req, fallback, acceptable)
}

// do runs req through the breaker, asking at level. The methods without a
// context pass context.Background() and the default level; the context's
// Err is read only if req fails, and a nil ctx from a caller acts the same.
func (b *googleBreaker) do(ctx context.Context, level Criticality, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	var stopped bool
	var err error
	if level != DefaultCriticality && level.Valid() {
		stopped, err = b.runLevel(ctx, level, req, fallback, acceptable) // criticality.go
	} else {
		var state callState
		state, err = b.run(ctx, req, fallback, acceptable)
		stopped = state == nilPanic
	}
	if stopped {
		panic(nil) // raised again: see recordPanic
	}
	return err
}

// run is do but for a panic(nil) that recordPanic stopped, which it
// reports as the state nilPanic.
func (b *googleBreaker) run(ctx context.Context, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) (state callState, err error) {
	if err := b.admit(); err != nil {
		if fallback != nil {
			return recorded, fallback(err)
		}
		return recorded, err
	}
	defer b.recordPanic(&state) // state is running

	err = req()
	if err == nil && acceptable == nil { // the common case, without a call to acceptable
		state = recorded
		b.markSuccess()
		return recorded, nil
	}
	result, reason := classify(ctx, err, acceptable)
	state = recorded
	b.record(result, reason)
	return recorded, err
}

// callState is where run is with a call, for recordPanic; the zero value
// is running.
type callState uint8

const (
	running  callState = iota // req or acceptable may still panic
	recorded                  // the outcome is recorded
	nilPanic                  // recordPanic stopped a panic(nil)
)

// record records a finished call as classify classified it.
func (b *googleBreaker) record(result outcome, reason string) {
	switch result {
	case success:
		b.markSuccess()
	case failure:
		b.markFailure(reason)
	}
}

// recordPanic, deferred by run, records a call that neither returned nor
// was recorded: req or acceptable panicked, or req called runtime.Goexit. A
// panic goes on with the same value.
//
// recover returns nil for runtime.Goexit, which goes on after this, and,
// with GODEBUG panicnil=1, for a panic(nil), which it stops (by default
// panic(nil) raises a *runtime.PanicNilError). The two cannot be told apart
// here: recordPanic sets *state to nilPanic, and run reports it to its
// caller, which raises panic(nil) again; after runtime.Goexit, nothing
// returns to read it.
func (b *googleBreaker) recordPanic(state *callState) {
	if *state != running {
		return
	}
	v := recover()
	if v == nil {
		b.markFailure(exitedReason)
		*state = nilPanic
		return
	}
	b.markFailure(fmt.Sprint("panic: ", v))
	panic(v)
}

// classify decides how a finished call is recorded, and the failure reason.
// It runs user code (acceptable, err.Error) that may panic.
func classify(ctx context.Context, err error, acceptable srebreaker.Acceptable) (outcome, string) {
	if ctx != nil && err != nil && errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
		return neither, ""
	}
	if acceptable == nil {
		acceptable = srebreaker.DefaultAcceptable
	}
	if acceptable(err) {
		return success, ""
	}
	if err == nil {
		return failure, "nil error not acceptable"
	}
	return failure, err.Error()
}

// ctxErr is ctx.Err(), or nil for a nil ctx.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}
