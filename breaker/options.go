package breaker

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/rollingwindow"
)

// Defaults of the options, cited by the docs, the README and the tests.
const (
	// DefaultK is the default multiplier on accepts; see [WithK].
	DefaultK = 1.5
	// DefaultProtection is the default number of tolerated failures; see
	// [WithProtection].
	DefaultProtection = 5
	// DefaultWindow is the default span of the rolling window; see
	// [WithWindow].
	DefaultWindow = 2 * time.Second
	// DefaultBuckets is the default number of buckets in the window (100 ms
	// each at the default window); see [WithBuckets].
	DefaultBuckets = 20
	// DefaultAggression is the default exponent on the drop probability; see
	// [WithAggression].
	DefaultAggression = 1.5
	// DefaultEvidence is the default number of calls the formula reads
	// back for on light traffic; see [WithEvidence].
	DefaultEvidence = 40
	// DefaultHorizonWindows is how far back, in windows, the formula
	// reads for them by default (1 min at the default window); see
	// [WithEvidence].
	DefaultHorizonWindows = 30
)

// Clock is the one method a breaker reads time through: the same interface
// as [rollingwindow.Clock]. github.com/benbjohnson/clock's Clock and *Mock
// satisfy it.
type Clock = rollingwindow.Clock

// realClock stands for the system clock. A breaker given it reads the
// monotonic clock alone (time.Since) on each call, and Now only to stamp
// failure reasons and events.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Option configures a breaker made by [New], [MustNew] or [NewRegistry].
type Option func(*options)

type options struct {
	name        string
	k           float64
	protection  int
	window      time.Duration
	buckets     int
	clock       Clock
	proba       *proba.Proba
	probaSet    bool
	aggression  float64
	countDrops  bool
	trustRecent bool
	evidence    int           // calls the formula reads back for; 0 for none
	horizon     time.Duration // how far back it reads

	listeners   []Listener
	dropEvents  bool
	nilListener bool // WithListener(nil) was given
	nilLogger   bool // WithLogger(nil) was given
	nilOption   bool // a nil Option was given
}

// newOptions applies opts over the defaults. It does not validate them.
func newOptions(opts []Option) options {
	o := options{
		k:          DefaultK,
		protection: DefaultProtection,
		window:     DefaultWindow,
		buckets:    DefaultBuckets,
		clock:      realClock{},
		aggression: DefaultAggression,
		countDrops: true,

		trustRecent: true,
		evidence:    DefaultEvidence,
	}
	for _, opt := range opts {
		if opt == nil {
			o.nilOption = true
			continue
		}
		opt(&o)
	}
	return o
}

// WithName names the breaker; [Breaker.Name] returns it, and the error of a
// dropped call quotes it. Without it, or with an empty name, the breaker gets
// a random name.
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// WithK sets K, the multiplier on accepts: the breaker admits up to K calls
// per success seen in the window before it starts dropping. Larger is more
// tolerant and sheds later; 1 sheds as soon as any call fails beyond the
// protection. Default [DefaultK] (1.5); it must be finite and at least 1.
func WithK(k float64) Option {
	return func(o *options) { o.k = k }
}

// WithProtection sets how many failures a window may hold beyond K·accepts
// before any call is dropped, so that a few failures on light traffic do not
// trigger shedding. Default [DefaultProtection] (5); it must be at least 0.
func WithProtection(protection int) Option {
	return func(o *options) { o.protection = protection }
}

// WithWindow sets the span of time over which outcomes are remembered.
// Longer is steadier and slower to react. Default [DefaultWindow] (2 s); it
// must be positive, and window/buckets at least 1 ms.
func WithWindow(window time.Duration) Option {
	return func(o *options) { o.window = window }
}

// WithBuckets sets how many buckets the window is split into: outcomes leave
// the window one bucket at a time. Default [DefaultBuckets] (20, so 100 ms
// each at the default window); it must be between 1 and 65,536, and
// window/buckets at least 1 ms.
func WithBuckets(buckets int) Option {
	return func(o *options) { o.buckets = buckets }
}

// WithClock sets the clock the breaker reads time from, for tests and
// simulations; it is read once per call that asks to be admitted, and once
// per failure to stamp its reason. Default: the system clock, whose
// monotonic reading alone places calls in the window, so that steps of the
// wall clock do not move it. It must not be nil, nor a nil pointer.
func WithClock(c Clock) Option {
	return func(o *options) { o.clock = c }
}

// WithProba sets the random source that decides which calls to drop, for
// tests and simulations ([proba.NewSeeded]). Default: the runtime's
// generator (math/rand/v2), drawn without a lock. It must not be nil.
func WithProba(p *proba.Proba) Option {
	return func(o *options) { o.proba, o.probaSet = p, true }
}

// WithAggression sets an exponent on the drop probability: the breaker drops
// with probability p^(1/aggression), where p is the formula's. 1 leaves the
// formula as it is; larger drops more, sooner, for the same ratio of
// failures, and settles with fewer calls per success under overload, while
// a healthy dependency (p = 0) is never throttled whatever the aggression.
// Default [DefaultAggression]; it must be a number from 1 to 10.
func WithAggression(aggression float64) Option {
	return func(o *options) { o.aggression = aggression }
}

// WithDropsCounted sets whether the breaker counts the calls it drops as
// requests in the formula's total, as the SRE book defines requests: the
// drops of each bucket count for at most K−1 per call admitted in that
// bucket. Counted, the calls that reach an overloaded dependency stay near
// K per success instead of rising with the offered rate. The bound keeps
// away the book's drawback, drops that keep a healed dependency shed for
// minutes: a bucket whose admitted calls all succeeded adds nothing to the
// numerator, so drops alone cannot keep the breaker shedding once the
// failures have left the window. Default true.
func WithDropsCounted(counted bool) Option {
	return func(o *options) { o.countDrops = counted }
}

// WithTrustRecent sets whether the breaker trusts its newest buckets over
// older ones when they agree. When the newest finished buckets and the live
// one hold failures and no success, more than protection of them, the
// dependency is taken to be down: older successes no longer count, and the
// breaker sheds at once instead of waiting for them to leave the window.
// When they hold successes and no failure, more than protection of them,
// the dependency is taken to be up: the breaker drops nothing, instead of
// waiting for older failures to leave the window. Mixed buckets (a
// dependency that fails part of the time) leave the formula as it is,
// unless they hold [WithEvidence]'s calls and fail clearly more often than
// the window: see there.
// Buckets without outcomes neither extend nor break a run; a window in
// which no call was admitted or dropped ends it. The runs do not depend on
// how often the breaker is read ([StatsOf], [Fleet.Counts]). Default true.
func WithTrustRecent(trust bool) Option {
	return func(o *options) { o.trustRecent = trust }
}

// WithPlainFormula makes the breaker drop with exactly the probability
// max(0, (total − protection − K·accepts) / (total + 1)) over a flat
// window, with total and accepts the admitted calls and their successes:
// no aggression exponent, drops not counted, no trust in recent buckets. It
// is the formula of go-zero's breaker and of the SRE book with requests
// counted as admitted calls, for comparisons and for callers who want it
// unchanged; it undoes [WithAggression], [WithDropsCounted],
// [WithTrustRecent] and [WithEvidence] given before it.
func WithPlainFormula() Option {
	return func(o *options) {
		o.aggression = 1
		o.countDrops = false
		o.trustRecent = false
		o.evidence = 0
	}
}

// WithEvidence sets how many admitted calls the formula wants to judge
// the dependency on. When the window holds fewer, on light traffic (a
// dependency called twice a second leaves 4 calls in a 2 s window, never
// more failures than protection tolerates), the breaker reads the outcomes
// and drops of older calls too, newest first, until it has calls of them
// or has reached horizon back: in blocks of a quarter of the window over
// the newest two windows or so, of a whole window further back.
//
// With [WithTrustRecent] on, four rules come with it. On heavy traffic,
// when the newest finished bucket and the live one hold calls calls or
// more, and fail more often than the window as a whole by more than three
// standard deviations of a sample of their size, the formula is also
// worked out over those two buckets alone, their drops counted alike, and
// the higher of the two ratios is taken: an overload or an outage that
// begins is judged on its own calls, not outvoted by the window's older
// successes. On light traffic, a dependency taken
// to be down is judged on the window's failures or on up to calls/2 of
// the failures read back for, whichever are more. Once its failing buckets
// have spanned a window (from the first to the newest, none with a
// success), protection no longer applies. After such a run,
// the first bucket of only successes readmits the dependency. A window
// without failures still drops nothing, whatever the older calls held: a
// dependency shed on older evidence gets a call through once a window has
// passed without an admitted failure.
//
// Default [DefaultEvidence] (40) within [DefaultHorizonWindows] windows
// (1 min at the default window), which a horizon of 0 stands for. calls
// must be at least 0; 0 turns all of this off: the formula then judges on
// the window alone. A horizon must be at least
// the window and at most 1,024 windows. The older calls take 16 bytes per
// block, about 0.8 KB per breaker at the defaults (42 blocks); reading
// them costs a pass over the blocks, only for calls that find failures in
// a window of fewer than calls calls.
func WithEvidence(calls int, horizon time.Duration) Option {
	return func(o *options) { o.evidence, o.horizon = calls, horizon }
}

// validate reports the first invalid option, naming it and its value.
func (o *options) validate() error {
	switch {
	case math.IsNaN(o.k) || math.IsInf(o.k, 0) || o.k < 1:
		return fmt.Errorf("%w: WithK(%v): K must be a finite number of at least 1", ErrInvalidOption, o.k)
	case o.protection < 0:
		return fmt.Errorf("%w: WithProtection(%d): protection must be at least 0", ErrInvalidOption, o.protection)
	case o.window <= 0:
		return fmt.Errorf("%w: WithWindow(%v): window must be positive", ErrInvalidOption, o.window)
	case o.buckets < 1 || o.buckets > maxBuckets:
		return fmt.Errorf("%w: WithBuckets(%d): buckets must be between 1 and %d", ErrInvalidOption, o.buckets, maxBuckets)
	case o.window/time.Duration(o.buckets) < minBucket:
		return fmt.Errorf("%w: WithWindow(%v) with WithBuckets(%d): each bucket would span %v, under the %v minimum",
			ErrInvalidOption, o.window, o.buckets, o.window/time.Duration(o.buckets), minBucket)
	case o.evidence < 0:
		return fmt.Errorf("%w: WithEvidence(%d, %v): calls must be at least 0", ErrInvalidOption, o.evidence, o.horizon)
	case o.horizon < 0 || o.horizon != 0 && (o.horizon < o.window || (o.horizon-1)/maxHorizonWindows >= o.window):
		return fmt.Errorf("%w: WithEvidence(%d, %v): horizon must be from the window (%v) to %d windows",
			ErrInvalidOption, o.evidence, o.horizon, o.window, maxHorizonWindows)
	case math.IsNaN(o.aggression) || o.aggression < 1 || o.aggression > maxAggression:
		return fmt.Errorf("%w: WithAggression(%v): aggression must be a number from 1 to %v",
			ErrInvalidOption, o.aggression, maxAggression)
	case o.nilListener:
		return fmt.Errorf("%w: WithListener(nil): listener must not be nil", ErrInvalidOption)
	case o.nilLogger:
		return fmt.Errorf("%w: WithLogger(nil): logger must not be nil", ErrInvalidOption)
	case o.nilOption:
		return fmt.Errorf("%w: a nil Option was given", ErrInvalidOption)
	case isNil(o.clock):
		return fmt.Errorf("%w: WithClock(nil): clock must not be nil", ErrInvalidOption)
	case o.probaSet && o.proba == nil:
		return fmt.Errorf("%w: WithProba(nil): proba must not be nil", ErrInvalidOption)
	}
	return nil
}

// settings returns the evidence settings the options make.
func (o *options) settings() evidence.Settings {
	s := evidence.Settings{
		K:           o.k,
		Protection:  float64(o.protection),
		Aggression:  o.aggression,
		CountDrops:  o.countDrops,
		TrustRecent: o.trustRecent,
		Evidence:    int64(o.evidence),
		Buckets:     o.buckets,
	}
	if o.evidence > 0 {
		horizon := o.horizon
		if horizon == 0 {
			horizon = DefaultHorizonWindows * o.window
		}
		s.Horizon = int((horizon + o.window - 1) / o.window)
	}
	return s
}

// Bounds of the options, stated in their docs.
const (
	maxAggression = 10.0
	minBucket     = time.Millisecond
	maxBuckets    = 1 << 16
	// maxHorizonWindows bounds WithEvidence's horizon, in windows.
	maxHorizonWindows = 1024
)

// isNil reports whether c is nil, or a nil pointer (or map, func…) in an
// interface: a clock whose Now would panic.
func isNil(c Clock) bool {
	if c == nil {
		return true
	}
	switch v := reflect.ValueOf(c); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
