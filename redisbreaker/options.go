package redisbreaker

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
)

// Defaults of the options, cited by the docs and the tests.
const (
	// DefaultPrefix starts every key the sharer writes; see [WithPrefix].
	DefaultPrefix = "srebreaker:"
	// DefaultPeriod is how often the loop adds and reads counts: one bucket
	// of a breaker with the default window and buckets; see [WithPeriod].
	DefaultPeriod = 100 * time.Millisecond
	// DefaultTimeout bounds each round; see [WithTimeout].
	DefaultTimeout = time.Second
)

// Bounds of the options and of breaker names, stated in their docs.
const (
	minPeriod   = 10 * time.Millisecond
	maxPeriod   = time.Minute
	minTimeout  = time.Millisecond
	maxTimeout  = time.Minute
	maxPrefix   = 256
	maxNameSize = 1024
)

// ErrInvalidOption is wrapped by the error [New] returns for an invalid
// option; the full text names the option and its value.
var ErrInvalidOption = errors.New("redisbreaker: invalid option")

// Option configures a [Sharer] made by [New].
type Option func(*options)

type options struct {
	prefix  string
	period  time.Duration
	timeout time.Duration
	logger  *slog.Logger
	clock   clock.Clock
}

// WithPrefix sets the prefix of the keys the sharer reads and writes: a
// breaker's blocks at prefix + "{" + name + "}:4:" + block, and its
// fleet's override at prefix + "{" + name + "}:override". Processes that share a
// dependency's counts use the same prefix; separate fleets (environments,
// applications) on one Redis use different ones. Default [DefaultPrefix];
// at most 256 bytes. A prefix holding "{" takes the place of the breaker's
// name as a Redis Cluster's hash tag: every breaker's keys then go to one
// slot.
func WithPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithPeriod sets how often the loop started by [Sharer.Start] adds the
// breakers' counts to the fleet's and reads the fleet's: the fleet's
// buckets are at most about one period old. Shorter reacts sooner and
// costs Redis more (see the package documentation). A breaker shared by
// more than 1,000 processes rounds less often, up to once a second (see
// "A large fleet" in the package documentation). Default [DefaultPeriod],
// one bucket of a default breaker; from 10 ms to 1 minute, and it should
// stay well under the breakers' window, beyond which their fleet histories
// are stale.
func WithPeriod(period time.Duration) Option {
	return func(o *options) { o.period = period }
}

// WithTimeout bounds each round, [Sharer.Sync]'s and the loop's, and
// each of [Sharer.SetOverride] and [Sharer.ClearOverride]: a Redis (or a
// shard of a Redis Cluster) slower than that counts as down for the
// round, and the call returns by then whatever go-redis's own timeouts
// (ReadTimeout, 3 s by default, applies alone unless
// redis.Options.ContextTimeoutEnabled); the commands go-redis is still
// waiting on finish in the background, and [Sharer.Close] waits for them.
// Default [DefaultTimeout]; from 1 ms to 1 minute.
func WithTimeout(timeout time.Duration) Option {
	return func(o *options) { o.timeout = timeout }
}

// WithLogger sets the logger the sharer reports through: once when Redis
// becomes unreachable or returns what it cannot use (the breakers then
// decide on their own histories), and once when it is back. Default
// slog.Default(); it must not be nil.
func WithLogger(logger *slog.Logger) Option {
	return func(o *options) { o.logger = logger }
}

// WithClock sets the clock the sharer stamps histories with and ticks on, for
// tests: github.com/benbjohnson/clock's Mock. Default: the system clock. It
// must not be nil.
func WithClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}

// validate reports the first invalid option, naming it and its value.
func (o *options) validate() error {
	switch {
	case len(o.prefix) > maxPrefix:
		return fmt.Errorf("%w: WithPrefix(%.20q…): at most %d bytes, got %d", ErrInvalidOption, o.prefix, maxPrefix, len(o.prefix))
	case o.period < minPeriod || o.period > maxPeriod:
		return fmt.Errorf("%w: WithPeriod(%v): must be from %v to %v", ErrInvalidOption, o.period, minPeriod, maxPeriod)
	case o.timeout < minTimeout || o.timeout > maxTimeout:
		return fmt.Errorf("%w: WithTimeout(%v): must be from %v to %v", ErrInvalidOption, o.timeout, minTimeout, maxTimeout)
	case o.logger == nil:
		return fmt.Errorf("%w: WithLogger(nil): logger must not be nil", ErrInvalidOption)
	case o.clock == nil:
		return fmt.Errorf("%w: WithClock(nil): clock must not be nil", ErrInvalidOption)
	}
	return nil
}

func newOptions(opts []Option) (options, error) {
	o := options{
		prefix:  DefaultPrefix,
		period:  DefaultPeriod,
		timeout: DefaultTimeout,
		logger:  slog.Default(),
		clock:   clock.New(),
	}
	for i, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: option %d of %d is nil", ErrInvalidOption, i+1, len(opts))
		}
		opt(&o)
	}
	return o, o.validate()
}
