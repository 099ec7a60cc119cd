package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker/breaker"
)

// The defaults of a Policy's options.
const (
	// DefaultAttempts is how many attempts a call gets in all: the first
	// and two retries, the SRE book's figure.
	DefaultAttempts = 3
	// DefaultBackoffBase is the backoff before the first retry, at most:
	// the n-th retry waits a uniform random time in [0, min(max,
	// base·2ⁿ⁻¹)) ("full jitter").
	DefaultBackoffBase = 50 * time.Millisecond
	// DefaultBackoffMax caps the backoff.
	DefaultBackoffMax = time.Second
	// maxAttempts is the most attempts WithAttempts accepts.
	maxAttempts = 10
)

// Option configures a [Policy].
type Option func(*options)

type options struct {
	attempts  int
	base, max time.Duration
	clock     clock.Clock
	src       rand.Source
	budget    *Budget // nil: no budget
	retryable func(error) bool
}

// WithAttempts sets how many attempts a call gets in all, the first
// included. Default [DefaultAttempts] (3); it must be from 1 (no retry) to
// 10.
func WithAttempts(n int) Option { return func(o *options) { o.attempts = n } }

// WithBackoff sets the backoff between attempts: before the n-th retry, a
// uniform random time in [0, min(max, base·2ⁿ⁻¹)). Default
// [DefaultBackoffBase] (50 ms) and [DefaultBackoffMax] (1 s); base must be
// positive and max at least base.
func WithBackoff(base, max time.Duration) Option {
	return func(o *options) { o.base, o.max = base, max }
}

// WithClock sets the clock the Policy reads deadlines and waits backoffs
// on (its Now and After); default the system clock. clock.NewMock() from
// github.com/benbjohnson/clock, the clock type every package of this
// module takes, makes tests run in virtual
// time. c must not be nil.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithRand sets the source the backoff's jitter is drawn from, for tests
// that want a seeded one (rand.NewPCG(1, 2)); it is used under a lock.
// Default: math/rand/v2's package-level functions. src must not be nil.
func WithRand(src rand.Source) Option { return func(o *options) { o.src = src } }

// WithBudget sets the retry budget taken from the breaker for each retry
// (see [Budget]); default [DefaultBudget]. Its Ratio must be from 0 to 1
// and its Floor at least 0.
func WithBudget(u Budget) Option { return func(o *options) { o.budget = &u } }

// WithoutBudget turns the retry budget off: every retry that the other
// rules allow is made. A breaker still draws on each attempt.
func WithoutBudget() Option { return func(o *options) { o.budget = nil } }

// WithRetryable sets which errors are worth a retry, among those that
// [Retryable] allows (never a drop, a spent budget, a cancellation or a
// "don't retry"): say, only transient ones. Default: every one of them.
// f must not be nil; it may be called from many goroutines at once.
func WithRetryable(f func(err error) bool) Option { return func(o *options) { o.retryable = f } }

// validate returns an error naming the first invalid option, or nil.
func (o *options) validate() error {
	bad := func(opt, why string) error { return fmt.Errorf("%w: %s: %s", ErrInvalidOption, opt, why) }
	switch {
	case o.attempts < 1 || o.attempts > maxAttempts:
		return bad(fmt.Sprintf("WithAttempts(%d)", o.attempts), "attempts must be from 1 to 10")
	case o.base <= 0:
		return bad(fmt.Sprintf("WithBackoff(%v, %v)", o.base, o.max), "base must be positive")
	case o.max < o.base:
		return bad(fmt.Sprintf("WithBackoff(%v, %v)", o.base, o.max), "max must be at least base")
	case o.clock == nil:
		return bad("WithClock(nil)", "the clock must not be nil")
	case o.src == nil:
		return bad("WithRand(nil)", "the source must not be nil")
	case o.retryable == nil:
		return bad("WithRetryable(nil)", "the function must not be nil")
	}
	if o.budget != nil {
		if why := o.budget.validate(); why != "" {
			return bad(fmt.Sprintf("WithBudget(%+v)", *o.budget), why)
		}
	}
	return nil
}

// Policy retries calls: how many attempts, how long between them, and the
// budget each retry takes from the breaker. Make one with [New]; the zero
// Policy is not usable. A Policy is safe for concurrent use by multiple
// goroutines.
type Policy struct {
	o  options
	mu sync.Mutex // guards o.src, when set
}

// systemClock stands for the system clock, for which sleep takes a timer
// it can stop.
var systemClock = clock.New()

// pcgDefault marks the package-level source.
type pcgDefault struct{}

func (pcgDefault) Uint64() uint64 { return rand.Uint64() }

// New returns a Policy configured by opts, or an error wrapping
// [ErrInvalidOption] that names the first invalid option and its value.
func New(opts ...Option) (*Policy, error) {
	u := DefaultBudget()
	o := options{attempts: DefaultAttempts, base: DefaultBackoffBase, max: DefaultBackoffMax,
		clock: systemClock, src: pcgDefault{}, budget: &u, retryable: func(error) bool { return true }}
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return &Policy{o: o}, nil
}

// MustNew is like [New] but panics, with the message New would return, when
// an option is invalid. It is meant for options written in code.
func MustNew(opts ...Option) *Policy {
	p, err := New(opts...)
	if err != nil {
		panic(err.Error())
	}
	return p
}

// Do runs req, through b, up to the Policy's attempts, and returns nil at
// the first success or the last attempt's error, untouched. It is
// [Call] without a result.
func (p *Policy) Do(ctx context.Context, b breaker.Breaker, req func(ctx context.Context) error) error {
	if req == nil {
		panic("retry: Policy.Do called with a nil req")
	}
	_, err := Call(ctx, p, b, func(ctx context.Context) (struct{}, error) { return struct{}{}, req(ctx) })
	return err
}

// Call runs req, through b, up to p's attempts, and returns what the
// first successful attempt returned, or the last attempt's result and
// error, untouched. Each attempt gets a context carrying its number (see
// [Attempt]), which httpbreaker and grpcbreaker send to the server.
//
// With b not nil, each attempt is run as [breaker.Call] runs it: b admits
// it or drops it, and records its outcome (only a nil error is a
// success). With b nil, req runs as it is: for calls that go through
// httpbreaker's Transport or grpcbreaker's client interceptors, whose own
// breakers admit each attempt and take each retry's budget ([TakeFor]).
//
// A call is retried only when all of these hold:
//   - the error is [Retryable] (not a drop of the breaker's, not a spent
//     budget, not a cancellation, not a server's "don't retry") and the
//     [WithRetryable] function says it is worth it;
//   - ctx is not done;
//   - an attempt is left ([WithAttempts]);
//   - the context's deadline, if any, leaves time for the backoff and for
//     an attempt as long as the last one: no attempt is started that could
//     not finish;
//   - the budget of b grants it ([Budget]; taken only when b is not nil).
//
// Between attempts, Call waits the backoff ([WithBackoff]), or what the
// error's [Pushback] asks for when it asks for a time. When ctx is done
// while it waits, Call returns ctx.Err(). A nil ctx is treated as
// context.Background(). A nil p or req is the caller's mistake: Call
// panics, naming it, before anything is run or recorded.
func Call[T any](ctx context.Context, p *Policy, b breaker.Breaker, req func(ctx context.Context) (T, error)) (T, error) {
	switch {
	case p == nil:
		panic("retry: Call called with a nil Policy")
	case req == nil:
		panic("retry: Call called with a nil req")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	o := &p.o
	var (
		v   T
		err error
	)
	for n := 1; ; n++ {
		a := &attempt{n: n, budget: o.budget, taken: b != nil || o.budget == nil}
		actx := context.WithValue(ctx, attemptKey{}, a)
		start := o.clock.Now()
		if b != nil {
			v, err = breaker.Call(actx, b, req)
		} else {
			v, err = req(actx)
		}
		if err == nil || !Retryable(err) || !o.retryable(err) || n >= o.attempts || ctx.Err() != nil {
			return v, err
		}
		wait := p.backoff(n)
		if d, _, ok := PushbackOf(err); ok && d > 0 {
			wait = d
		}
		if dl, ok := ctx.Deadline(); ok {
			now := o.clock.Now()
			if !now.Add(wait).Add(now.Sub(start)).Before(dl) {
				return v, err // the next attempt could not finish in time
			}
		}
		if b != nil && o.budget != nil {
			if o.budget.Take(b) != nil {
				return v, err
			}
		}
		if werr := p.sleep(ctx, wait); werr != nil {
			return v, werr
		}
	}
}

// backoff returns the wait before the n-th retry: uniform in [0,
// min(max, base·2ⁿ⁻¹)).
func (p *Policy) backoff(n int) time.Duration {
	ceiling := p.o.base
	for i := 1; i < n && ceiling < p.o.max; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, p.o.max)
	var u uint64
	if _, ok := p.o.src.(pcgDefault); ok {
		u = rand.Uint64()
	} else {
		p.mu.Lock()
		u = p.o.src.Uint64()
		p.mu.Unlock()
	}
	return time.Duration(u % uint64(ceiling))
}

// sleep waits d on the Policy's clock, or until ctx is done: then it
// returns ctx.Err().
func (p *Policy) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if p.o.clock == systemClock {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-p.o.clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
