package redisbreaker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	// DefaultTimeout bounds one round trip of the loop; see [WithTimeout].
	DefaultTimeout = time.Second
)

// Bounds of the options and of breaker names, stated in their docs.
const (
	minPeriod   = 10 * time.Millisecond
	maxPeriod   = time.Minute
	maxPrefix   = 256
	maxID       = 128
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
	id      string
	v2      bool
	v3      bool
}

// WithPrefix sets the prefix of the keys the sharer reads and writes: a
// breaker's blocks at prefix + "{" + name + "}:4:" + block (and, with
// [WithV3], its hash at prefix + name). Processes that share a
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

// WithTimeout bounds one round trip of the loop, through its context: a
// Redis slower than that counts as down for the round. Default
// [DefaultTimeout]; it must be positive. go-redis applies a context's
// deadline to its reads and writes only with
// redis.Options.ContextTimeoutEnabled; otherwise its own ReadTimeout and
// WriteTimeout bound them.
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

// WithProcessID sets the name this process publishes its history under
// in layout v3 ([WithV3]), in each breaker's hash. Each process of the
// fleet needs its own; two processes with the same ID overwrite each
// other's histories. Layout v4 names no process. Default: 16 random
// hexadecimal digits, new for each [Sharer]. From 1 to 128 bytes, not
// starting with "=".
func WithProcessID(id string) Option {
	return func(o *options) { o.id = id }
}

// WithV3 sets whether the sharer also publishes each breaker's history in
// layout v3, as redisbreaker published it before layout v4 (counters on a
// grid of buckets), for the processes of the fleet that still run such a
// version, and reads theirs: a fleet in a rolling upgrade from v3 shares
// one fleet's evidence when it upgrades in two steps, first with
// WithV3(true) on every upgraded process, then, once no process runs the
// old version, without it. Each round then also runs layout v3's script
// per breaker, which costs Redis about a hundred times a v4 round (see the
// package documentation, "Layouts"). Default false.
func WithV3(publish bool) Option {
	return func(o *options) { o.v3 = publish }
}

// WithV2 sets whether a sharer that publishes layout v3 ([WithV3]) also
// publishes each breaker's state in layout v2, the counts that
// redisbreaker published before it shared histories, beside its history,
// for processes of the fleet that still run such a version: they read the
// v2 field, and skip the v3 one. Default true; it does nothing without
// WithV3. See the package documentation, "Layouts".
func WithV2(publish bool) Option {
	return func(o *options) { o.v2 = publish }
}

// validate reports the first invalid option, naming it and its value.
func (o *options) validate() error {
	switch {
	case len(o.prefix) > maxPrefix:
		return fmt.Errorf("%w: WithPrefix(%.20q…): at most %d bytes, got %d", ErrInvalidOption, o.prefix, maxPrefix, len(o.prefix))
	case o.period < minPeriod || o.period > maxPeriod:
		return fmt.Errorf("%w: WithPeriod(%v): must be from %v to %v", ErrInvalidOption, o.period, minPeriod, maxPeriod)
	case o.timeout <= 0:
		return fmt.Errorf("%w: WithTimeout(%v): must be positive", ErrInvalidOption, o.timeout)
	case o.logger == nil:
		return fmt.Errorf("%w: WithLogger(nil): logger must not be nil", ErrInvalidOption)
	case o.clock == nil:
		return fmt.Errorf("%w: WithClock(nil): clock must not be nil", ErrInvalidOption)
	case o.id == "" || len(o.id) > maxID:
		return fmt.Errorf("%w: WithProcessID(%.20q): must be from 1 to %d bytes, got %d", ErrInvalidOption, o.id, maxID, len(o.id))
	case strings.HasPrefix(o.id, "="):
		return fmt.Errorf("%w: WithProcessID(%.20q): must not start with \"=\", which marks the sharer's own fields", ErrInvalidOption, o.id)
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
		id:      randomID(),
		v2:      true,
	}
	for _, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: a nil Option was given", ErrInvalidOption)
		}
		opt(&o)
	}
	return o, o.validate()
}

// randomID returns 16 random hexadecimal digits.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return hex.EncodeToString(b[:])
}
