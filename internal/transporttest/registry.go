package transporttest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// Registry hands out the real breakers of a breaker.Registry, wrapped so
// that the outcomes reported on their promises are counted per key. Safe
// for concurrent use.
type Registry struct {
	*breaker.Registry
	mu     sync.Mutex
	counts map[string]*Counts // guarded by mu
	// reported gets a value after each outcome is reported, for tests in
	// which the client can see the answer before the server reports.
	reported chan struct{}
}

// NewRegistry returns a Registry whose breakers read a mock clock, set to
// 2024-01-01, and a source seeded with 1, then opts.
func NewRegistry(opts ...breaker.Option) *Registry {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return &Registry{
		Registry: breaker.MustNewRegistry(append([]breaker.Option{
			breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
		}, opts...)...),
		counts:   map[string]*Counts{},
		reported: make(chan struct{}, 1<<16),
	}
}

// Counts are the outcomes reported for one key, and the calls marked
// answered before their outcome.
type Counts struct {
	Accepts, Rejects, Ignores, Answers atomic.Int64
	// Overloads are the Rejects recorded as overload rejections
	// (srebreaker.RejectOverloaded).
	Overloads atomic.Int64
	// Admitted counts the promises the breaker gave (Allow, AllowCtx).
	Admitted atomic.Int64
	reported chan<- struct{}
}

func (c *Counts) report(n *atomic.Int64) {
	n.Add(1)
	select {
	case c.reported <- struct{}{}:
	default:
	}
}

// CountsFor returns the counts of key.
func (r *Registry) CountsFor(key string) *Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.counts[key]
	if !ok {
		c = &Counts{reported: r.reported}
		r.counts[key] = c
	}
	return c
}

// Get returns the breaker of key, counting.
func (r *Registry) Get(key string) breaker.Breaker {
	return countingBreaker{Breaker: r.Registry.Get(key), c: r.CountsFor(key)}
}

// Reported gets a value after each outcome is reported, on any key.
func (r *Registry) Reported() <-chan struct{} { return r.reported }

// WaitReported waits until an outcome is reported, for a test in which
// the report comes from another goroutine; it fails the test rather than
// hang.
func (r *Registry) WaitReported(t *testing.T) {
	t.Helper()
	select {
	case <-r.reported:
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome was reported")
	}
}

// Totals returns the successes and the calls recorded for key.
func (r *Registry) Totals(key string) (accepts, total int64) {
	c := r.CountsFor(key)
	return c.Accepts.Load(), c.Accepts.Load() + c.Rejects.Load()
}

// Answered returns the calls marked answered for key.
func (r *Registry) Answered(key string) int64 { return r.CountsFor(key).Answers.Load() }

// Ignored returns the calls reported as neither for key.
func (r *Registry) Ignored(key string) int64 { return r.CountsFor(key).Ignores.Load() }

// Outcomes returns what was reported for key: successes, failures and
// calls recorded as neither.
func (r *Registry) Outcomes(key string) [3]int64 {
	c := r.CountsFor(key)
	return [3]int64{c.Accepts.Load(), c.Rejects.Load(), c.Ignores.Load()}
}

type countingBreaker struct {
	breaker.Breaker
	c *Counts
}

func (b countingBreaker) Allow() (srebreaker.Promise, error) {
	p, err := b.Breaker.Allow()
	if err != nil {
		return nil, err
	}
	b.c.Admitted.Add(1)
	return countingPromise{p: p, c: b.c}, nil
}

func (b countingBreaker) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	p, err := b.Breaker.AllowCtx(ctx)
	if err != nil {
		return nil, err
	}
	b.c.Admitted.Add(1)
	return countingPromise{p: p, c: b.c}, nil
}

type countingPromise struct {
	p srebreaker.Promise
	c *Counts
}

func (p countingPromise) Accept()              { p.p.Accept(); p.c.report(&p.c.Accepts) }
func (p countingPromise) Reject(reason string) { p.p.Reject(reason); p.c.report(&p.c.Rejects) }
func (p countingPromise) Ignore()              { srebreaker.Ignore(p.p); p.c.report(&p.c.Ignores) }

// RejectOverloaded records on the breaker's promise and counts the call
// among both Overloads and Rejects.
func (p countingPromise) RejectOverloaded(reason string) {
	srebreaker.RejectOverloaded(p.p, reason)
	p.c.Overloads.Add(1)
	p.c.report(&p.c.Rejects)
}

// Answered marks the call answered on the breaker's promise, counts it,
// and returns the promise of its outcome, counting too.
func (p countingPromise) Answered() srebreaker.Promise {
	q := p.p
	if a, ok := q.(interface{ Answered() srebreaker.Promise }); ok {
		q = a.Answered()
	}
	p.c.report(&p.c.Answers)
	return countingPromise{p: q, c: p.c}
}
