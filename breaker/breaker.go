package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/coarseclock"
	"github.com/srebreaker/srebreaker/proba"
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
	name       string
	k          float64 // multiplier on accepts
	kMinus1    float64 // k − 1, for the bound in admit
	protection float64 // failures tolerated beyond k·accepts
	// protectionCount is protection as a count, for the streaks.
	protectionCount uint64
	proba           *proba.Proba
	window          *window
	reasons         reasonLog

	events *events // nil without listeners

	aggression  float64 // the drop probability is the formula's to the power 1/aggression
	countDrops  bool    // drops count as requests, up to k−1 per admitted call of their bucket
	trustRecent bool    // agreeing newest buckets override older ones
	sampleScale float64 // dropSample to the power u takes in admit's comparison

	// clock is nil for the system clock, read through the process's coarse
	// clock; otherwise the clock given by WithClock, read on every call,
	// with times measured from start.
	clock Clock
	start time.Time
}

func newGoogleBreaker(o options) *googleBreaker {
	b := &googleBreaker{
		name:       o.name,
		k:          o.k,
		kMinus1:    o.k - 1,
		protection: float64(o.protection),
		proba:      o.proba,

		protectionCount: uint64(o.protection),

		aggression:  o.aggression,
		countDrops:  o.countDrops,
		trustRecent: o.trustRecent,
		sampleScale: sampleScale(o.aggression),
	}
	span := o.window / time.Duration(o.buckets)
	if _, system := o.clock.(realClock); system {
		// The coarse clock's lag stays under a tenth of a bucket.
		coarseclock.Require(span / 10)
	} else {
		b.clock = o.clock
		b.start = o.clock.Now()
	}
	b.window = newWindow(o.buckets, span, b.now(), o.k-1)
	if len(o.listeners) > 0 {
		b.events = &events{listeners: slices.Clone(o.listeners), drops: o.dropEvents, window: o.window}
	}
	return b
}

// now returns the time the window runs on.
func (b *googleBreaker) now() time.Duration {
	if b.clock == nil {
		return coarseclock.Now()
	}
	return b.clock.Now().Sub(b.start)
}

// wallNow returns the time a failure reason is stamped with.
func (b *googleBreaker) wallNow() time.Time {
	if b.clock == nil {
		return time.Now()
	}
	return b.clock.Now()
}

func (b *googleBreaker) Name() string { return b.name }

// sampleScale is dropSample to the power u takes in admit's comparison for
// aggression: u < p/dropSample ⟺ lhs·sampleScale < rhs.
func sampleScale(aggression float64) float64 {
	switch aggression {
	case 1.5:
		return dropSample * dropSample * dropSample
	default:
		return math.Pow(dropSample, aggression)
	}
}

// dropSample is how many drops a counted drop stands for: one drop in
// dropSample, drawn at random, adds dropSample to the count, so that most
// drops touch no counter and the count is right on average.
const dropSample = 8

// odds returns, at time now, the formula's numerator (no call is dropped
// unless it is positive) and its requests: the drop probability is
// (num/(requests+1))^(1/aggression). admit does the same, written out.
func (b *googleBreaker) odds(now time.Duration) (num, requests float64) {
	b.at(now)
	w := b.window
	succ, fail := unpack(w.completed.Load())
	liveFail := w.failures.Load()
	var counted, liveDrops, down uint64
	if b.countDrops {
		counted, liveDrops = w.countedDrops.Load(), w.drops.Load()
	}
	if b.trustRecent {
		down = w.downStreak.Load()
	}
	failures := int64(fail + liveFail)
	if b.surelyAdmits(succ, failures, counted+liveDrops, down) {
		return 0, 0
	}
	return b.slowOdds(succ, failures, liveFail, counted, liveDrops, down)
}

// at brings the window to time now, and looks for a change of shedding
// when it enters a new bucket.
func (b *googleBreaker) at(now time.Duration) {
	if b.window.at(now) && b.events != nil {
		b.events.bucketTurned(b, now)
	}
}

// surelyAdmits reports whether no call can be dropped, from the finished
// buckets' successes, all failures and drops and the down streak, without
// reading the live successes, which may be spread over processors. The
// formula's numerator is at most failures + drops − protection −
// (k−1)·successes. While that stays at or below 0 with the finished
// buckets' successes alone, it does with the live bucket's too, unless the
// newest finished bucket held only failures (trust in recent buckets may
// then set the successes aside).
func (b *googleBreaker) surelyAdmits(succ uint64, failures int64, drops, down uint64) bool {
	// Counts fit an int64 by far; converting from int64 is one instruction,
	// from uint64 a branch.
	return down == 0 && float64(failures+int64(drops)) <= b.protection+b.kMinus1*float64(int64(succ))
}

// slowOdds is odds once surelyAdmits said no.
func (b *googleBreaker) slowOdds(succ uint64, failures int64, liveFail, counted, liveDrops, down uint64) (num, requests float64) {
	w := b.window
	liveSucc := w.successes.Load()
	successes := float64(int64(succ + liveSucc))
	if b.trustRecent {
		if down > 0 && liveSucc == 0 && down+liveFail > b.protectionCount {
			successes = 0 // down: older successes no longer count
		} else if up := w.upStreak.Load(); up > 0 && liveFail == 0 && up+liveSucc > b.protectionCount {
			return 0, 0 // up: older failures no longer count
		}
	}
	requests = successes + float64(failures)
	if b.countDrops {
		requests += float64(int64(counted + w.counted(liveSucc, liveFail, liveDrops)))
	}
	return requests - b.protection - b.k*successes, requests
}

// probability returns the probability that a call asking at time now is
// dropped.
func (b *googleBreaker) probability(now time.Duration) float64 {
	num, requests := b.odds(now)
	if !(num > 0) {
		return 0
	}
	return math.Pow(num/(requests+1), 1/b.aggression)
}

// admit decides whether to admit a call: nil if admitted, the drop error if
// not.
func (b *googleBreaker) admit() error {
	w := b.window
	if now := b.now(); w.at(now) && b.events != nil { // b.at, written out
		b.events.bucketTurned(b, now)
	}
	succ, fail := unpack(w.completed.Load())
	liveFail := w.failures.Load()
	var counted, liveDrops, down uint64
	if b.countDrops {
		counted, liveDrops = w.countedDrops.Load(), w.drops.Load()
	}
	if b.trustRecent {
		down = w.downStreak.Load()
	}
	failures := int64(fail + liveFail)
	if b.surelyAdmits(succ, failures, counted+liveDrops, down) {
		return nil
	}
	num, requests := b.slowOdds(succ, failures, liveFail, counted, liveDrops, down)
	if !(num > 0) {
		return nil
	}
	// Drop with probability (num/den)^(1/aggression): with u uniform in
	// [0, 1), when u^aggression·den < num, compared without a division or,
	// for the usual aggressions, a power.
	den := requests + 1
	u := b.proba.Float64()
	var lhs, rhs float64 // drop when lhs < rhs
	switch b.aggression {
	case 1.5: // the default; u^1.5·den < num, squared
		uu, dd := u*u, den*den
		lhs, rhs = uu*(u*dd), num*num
	case 1:
		lhs, rhs = u*den, num
	case 2:
		lhs, rhs = u*u*den, num
	default:
		lhs, rhs = math.Pow(u, b.aggression)*den, num
	}
	if lhs >= rhs {
		return nil
	}
	// One drop in dropSample, those with u under a dropSample-th of the
	// probability, adds dropSample to the count.
	if lhs*b.sampleScale < rhs {
		b.window.drops.Add(dropSample)
	}
	if b.events != nil {
		b.events.dropped(b, math.Pow(num/den, 1/b.aggression))
	}
	return b.reasons.err(b.name)
}

func (b *googleBreaker) markSuccess() { b.window.successes.Add(1) }

func (b *googleBreaker) markFailure(reason string) {
	b.window.failures.Add(1)
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
	return b.Allow()
}

func (b *googleBreaker) Do(req func() error) error {
	return b.do(context.Background(), req, nil, nil)
}

func (b *googleBreaker) DoCtx(ctx context.Context, req func() error) error {
	return b.doCtx(ctx, req, nil, nil)
}

func (b *googleBreaker) DoWithAcceptable(req func() error, acceptable srebreaker.Acceptable) error {
	return b.do(context.Background(), req, nil, acceptable)
}

func (b *googleBreaker) DoWithAcceptableCtx(ctx context.Context, req func() error,
	acceptable srebreaker.Acceptable) error {
	return b.doCtx(ctx, req, nil, acceptable)
}

func (b *googleBreaker) DoWithFallback(req func() error, fallback Fallback) error {
	return b.do(context.Background(), req, fallback, nil)
}

func (b *googleBreaker) DoWithFallbackCtx(ctx context.Context, req func() error, fallback Fallback) error {
	return b.doCtx(ctx, req, fallback, nil)
}

func (b *googleBreaker) DoWithFallbackAcceptable(req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	return b.do(context.Background(), req, fallback, acceptable)
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
	return b.do(ctx, req, fallback, acceptable)
}

// do runs req through the breaker. The methods without a context pass
// context.Background(), whose Err is read only if req fails; a nil ctx from
// a caller acts the same.
func (b *googleBreaker) do(ctx context.Context, req func() error, fallback Fallback,
	acceptable srebreaker.Acceptable) error {
	if err := b.admit(); err != nil {
		if fallback != nil {
			return fallback(err)
		}
		return err
	}
	recorded := false
	defer b.recordPanic(&recorded)

	err := req()
	if err == nil && acceptable == nil { // the common case, without a call to acceptable
		recorded = true
		b.markSuccess()
		return nil
	}
	result, reason := classify(ctx, err, acceptable)
	recorded = true
	b.record(result, reason)
	return err
}

// record records a finished call as classify classified it.
func (b *googleBreaker) record(result outcome, reason string) {
	switch result {
	case success:
		b.markSuccess()
	case failure:
		b.markFailure(reason)
	}
}

// recordPanic, deferred by do, records a call that neither returned nor was
// recorded: req or acceptable panicked, or req called runtime.Goexit. A
// panic goes on with the same value.
func (b *googleBreaker) recordPanic(recorded *bool) {
	if *recorded {
		return
	}
	v := recover()
	if v == nil { // runtime.Goexit (panic(nil) recovers as *runtime.PanicNilError)
		b.markFailure("call exited without returning (runtime.Goexit)")
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
