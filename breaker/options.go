package breaker

import (
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/internal/tuning"
	"github.com/srebreaker/srebreaker/proba"
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
	// DefaultLimit is how many breakers a [Registry] keeps for names that
	// come from outside (the integrations' hosts, methods and nodes) unless
	// [Registry.SetLimit] says otherwise, [DefaultRegistry] included: far more
	// than a program has dependencies, routes or methods, and few enough that
	// a flood of names chosen by others (a Transport sent to 100,000 hosts)
	// holds about 10 MiB (docs/design/reliability.md has the figures). A breaker
	// holds about 2.4 KiB, 0.8 KiB of it the history it reads back on light
	// traffic.
	DefaultLimit = 4096
	// MaxNameLen is the most bytes of a breaker's name, whether given to
	// [WithName] or looked up in a [Registry], so that names that come from
	// outside (hosts of URLs users supply, gRPC methods a client sends, what
	// a WithKey function of httpbreaker or grpcbreaker returns, a name given
	// to [Get]) cost a bounded amount of memory however long they are.
	//
	// A name of at most MaxNameLen bytes is kept as it is. A longer one is cut
	// to its first 229 bytes (up to 3 fewer, to end on a UTF-8 boundary),
	// followed by "…" and 24 hexadecimal digits of the SHA-256 of the whole
	// name: MaxNameLen bytes at most in all, such as
	//
	//	aaaaaaaa…aaaa.example.com…3f2c9a0b17d4e65c8a91b2f0
	//
	// for a host of 1 MiB (the first "…" stands for the rest of the 229
	// bytes). That cut form is the breaker's name: [Breaker.Name], [Stats].Name, the
	// names [Registry.Range] gives and so the exporters' labels, and the text of
	// a dropped call's error. Two long names that differ anywhere get different
	// breakers; every call with the same long name gets the same one, and
	// [Registry.Configure] and [Registry.NoBreakerFor] take the long name as Get
	// does. A lookup of a long name hashes it whole and allocates the cut form,
	// about 300 bytes: the price of a name that long, which shorter names do
	// not pay.
	//
	// A registry also keeps a copy of each name rather than the caller's string,
	// so that a short name sliced from a large string (a host from a long URL)
	// does not keep that string alive.
	MaxNameLen = 256
)

// The refinements' settings (docs/design/algorithm.md), which internal/tuning sets
// for simulations and tests.
const (
	defaultBuckets        = tuning.DefaultBuckets
	defaultAggression     = tuning.DefaultAggression
	defaultEvidence       = tuning.DefaultEvidence
	defaultHorizonWindows = tuning.DefaultHorizonWindows
)

// Option configures a breaker made by [New], [MustNew] or [NewRegistry].
type Option func(*options)

type options struct {
	name        string
	k           float64
	protection  int
	window      time.Duration
	buckets     int
	clock       clock.Clock // nil for the system clock
	clockSet    bool
	proba       *proba.Proba
	probaSet    bool
	aggression  float64
	countDrops  bool
	trustRecent bool
	evidence    int            // calls the formula reads back for; 0 for none
	horizon     time.Duration  // how far back it reads
	without     evidence.Rules // the judge's rules turned off (tuning.Without)
	plain       bool           // WithPlainFormula was given
	slowCall    time.Duration  // WithSlowCall's threshold; 0 to learn it
	slowCallSet bool

	listeners   []func(Event)
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
		buckets:    defaultBuckets,
		aggression: defaultAggression,
		countDrops: true,

		trustRecent: true,
		evidence:    defaultEvidence,
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
// a random name. A name longer than [MaxNameLen] bytes is cut as a
// registry cuts it. A registry names each breaker itself: [NewRegistry]
// and [Registry.Configure] refuse WithName.
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
// must be at least 20 ms, 1 ms for each of the window's 20 buckets.
func WithWindow(window time.Duration) Option {
	return func(o *options) { o.window = window }
}

// WithClock sets the clock the breaker reads time from, for tests and
// simulations; it is read by every call while a bucket is young (its first
// 32 calls) and by one call in 16 after, and once per failure to stamp its
// reason (docs/design/algorithm.md, "How a call is timed"); of the clock's
// methods, the breaker reads Now alone. clock.NewMock() from
// github.com/benbjohnson/clock makes a test's time its own; every package
// of this module takes that clock type. Default: the system clock, whose
// monotonic reading alone places calls in the window, so that steps of the
// wall clock do not move it. It must not be nil, nor a nil pointer.
func WithClock(c clock.Clock) Option {
	return func(o *options) { o.clock, o.clockSet = c, true }
}

// WithProba sets the random source that decides which calls to drop, for
// tests and simulations ([proba.NewSeeded]). Default: the runtime's
// generator (math/rand/v2), drawn without a lock. It must not be nil.
func WithProba(p *proba.Proba) Option {
	return func(o *options) { o.proba, o.probaSet = p, true }
}

// WithPlainFormula makes the breaker drop with exactly the probability
// max(0, (total − protection − K·accepts) / (total + 1)) over a flat
// window, with total and accepts the admitted calls and their successes:
// none of the refinements docs/design/algorithm.md describes (no aggression
// exponent, drops not counted, no trust in recent buckets, no reading back
// on light traffic). It is the formula of go-zero's breaker and of the SRE
// book with requests counted as admitted calls, for comparisons and for
// callers who want it unchanged.
func WithPlainFormula() Option {
	return func(o *options) {
		o.aggression = 1
		o.countDrops = false
		o.trustRecent = false
		o.evidence = 0
		o.plain = true
	}
}

// WithSlowCall sets how long a call may take before it counts as a
// failure, for a dependency whose slowness hurts its callers as much as
// its errors do: a call that comes back after more than d counts as a
// failure whatever its outcome, and one still out after more than d counts
// as a failure then, before it comes back, and its outcome no more when it
// does. Calls are timed to within a bucket of the window (100 ms at the
// defaults), without reading the clock on the call path.
//
// Without it, the breaker learns how long the dependency's calls take
// from the calls themselves, and a call counts against the dependency
// only when it is still out four times longer than the longest of them
// took lately: a dependency that stops answering is shed before the
// callers' timeouts come back, and one that takes seconds as a rule is
// not (docs/design/behaviour.md, "Hangs and slowdowns").
//
// d must be at least a bucket of the window (100 ms at the defaults) and
// at most 2 minutes; it cannot be combined with [WithPlainFormula], under
// which every call counts when it comes back, as the formula's card says.
func WithSlowCall(d time.Duration) Option {
	return func(o *options) { o.slowCall, o.slowCallSet = d, true }
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
		return fmt.Errorf("%w: tuning.Buckets(%d): buckets must be between 1 and %d", ErrInvalidOption, o.buckets, maxBuckets)
	case o.window/time.Duration(o.buckets) < minBucket:
		return fmt.Errorf("%w: WithWindow(%v): window must be at least %v, %v for each of its %d buckets",
			ErrInvalidOption, o.window, minBucket*time.Duration(o.buckets), minBucket, o.buckets)
	case o.evidence < 0:
		return fmt.Errorf("%w: tuning.Evidence{%d, %v}: calls must be at least 0", ErrInvalidOption, o.evidence, o.horizon)
	case o.horizon < 0 || o.horizon != 0 && (o.horizon < o.window || (o.horizon-1)/maxHorizonWindows >= o.window):
		return fmt.Errorf("%w: tuning.Evidence{%d, %v}: horizon must be from the window (%v) to %d windows",
			ErrInvalidOption, o.evidence, o.horizon, o.window, maxHorizonWindows)
	case math.IsNaN(o.aggression) || o.aggression < 1 || o.aggression > maxAggression:
		return fmt.Errorf("%w: tuning.Aggression(%v): aggression must be a number from 1 to %v",
			ErrInvalidOption, o.aggression, maxAggression)
	case o.slowCallSet && (o.slowCall < o.window/time.Duration(o.buckets) || o.slowCall > maxSlowCall):
		return fmt.Errorf("%w: WithSlowCall(%v): the threshold must be from a bucket of the window (%v) to %v",
			ErrInvalidOption, o.slowCall, o.window/time.Duration(o.buckets), maxSlowCall)
	case o.slowCallSet && o.plain:
		return fmt.Errorf("%w: WithSlowCall(%v): the plain formula counts every call when it comes back; "+
			"WithSlowCall cannot be combined with WithPlainFormula", ErrInvalidOption, o.slowCall)
	case o.nilListener:
		return fmt.Errorf("%w: WithListener(nil): listener must not be nil", ErrInvalidOption)
	case o.nilLogger:
		return fmt.Errorf("%w: WithLogger(nil): logger must not be nil", ErrInvalidOption)
	case o.nilOption:
		return fmt.Errorf("%w: a nil Option was given", ErrInvalidOption)
	case o.clockSet && isNil(o.clock):
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
			horizon = defaultHorizonWindows * o.window
		}
		s.Horizon = int((horizon + o.window - 1) / o.window)
	}
	return s.Without(o.without)
}

// Bounds of the options, stated in their docs.
const (
	maxAggression = 10.0
	minBucket     = time.Millisecond
	maxBuckets    = 1 << 16
	// maxHorizonWindows bounds withEvidence's horizon, in windows (a knob
	// of the tests and the simulator, no option).
	maxHorizonWindows = 1024
)

// isNil reports whether c is nil, or a nil pointer (or map, func…) in an
// interface: a clock whose Now would panic.
func isNil(c clock.Clock) bool {
	if c == nil {
		return true
	}
	switch v := reflect.ValueOf(c); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
