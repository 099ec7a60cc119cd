package httpbreaker_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// serve runs h on a real server on 127.0.0.1 with a port the system picks,
// until the test ends, and returns its base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// newRegistry returns a registry whose breakers read a mock clock and a
// seeded random source, and count what is reported on their promises.
func newRegistry(opts ...breaker.Option) *countingRegistry {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return &countingRegistry{
		Registry: breaker.NewRegistry(append([]breaker.Option{
			breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
		}, opts...)...),
		counts:   map[string]*counts{},
		reported: make(chan struct{}, 1<<16),
	}
}

// countingRegistry hands out the real breakers of a breaker.Registry,
// wrapped so that the outcomes reported on their promises are counted per
// key.
type countingRegistry struct {
	*breaker.Registry
	mu     sync.Mutex
	counts map[string]*counts // guarded by mu
	// reported gets a value after each outcome is reported, for tests in
	// which the client can see the answer before the server reports.
	reported chan struct{}
}

// counts are the outcomes reported for one key.
type counts struct {
	accepts, rejects, ignores atomic.Int64
	reported                  chan<- struct{}
}

func (c *counts) report(n *atomic.Int64) {
	n.Add(1)
	select {
	case c.reported <- struct{}{}:
	default:
	}
}

func (r *countingRegistry) countsFor(key string) *counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.counts[key]
	if !ok {
		c = &counts{reported: r.reported}
		r.counts[key] = c
	}
	return c
}

func (r *countingRegistry) Get(key string) breaker.Breaker {
	return countingBreaker{Breaker: r.Registry.Get(key), c: r.countsFor(key)}
}

type countingBreaker struct {
	breaker.Breaker
	c *counts
}

func (b countingBreaker) Allow() (srebreaker.Promise, error) {
	p, err := b.Breaker.Allow()
	if err != nil {
		return nil, err
	}
	return countingPromise{p: p, c: b.c}, nil
}

func (b countingBreaker) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	p, err := b.Breaker.AllowCtx(ctx)
	if err != nil {
		return nil, err
	}
	return countingPromise{p: p, c: b.c}, nil
}

type countingPromise struct {
	p srebreaker.Promise
	c *counts
}

func (p countingPromise) Accept()              { p.p.Accept(); p.c.report(&p.c.accepts) }
func (p countingPromise) Reject(reason string) { p.p.Reject(reason); p.c.report(&p.c.rejects) }
func (p countingPromise) Ignore()              { srebreaker.Ignore(p.p); p.c.report(&p.c.ignores) }

// totals returns the successes and the calls recorded for key.
func totals(r *countingRegistry, key string) (accepts, total int64) {
	c := r.countsFor(key)
	return c.accepts.Load(), c.accepts.Load() + c.rejects.Load()
}

// ignored returns the calls reported as neither for key.
func ignored(r *countingRegistry, key string) int64 {
	return r.countsFor(key).ignores.Load()
}

// trackedBody is a request or response body that counts reads and closes,
// and closes the body it wraps, if any.
type trackedBody struct {
	r             io.Reader
	c             io.Closer // may be nil
	reads, closes atomic.Int64
}

func (b *trackedBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.r.Read(p)
}

func (b *trackedBody) Close() error {
	b.closes.Add(1)
	if b.c != nil {
		return b.c.Close()
	}
	return nil
}

// trackingTransport wraps every response body in a trackedBody.
type trackingTransport struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*trackedBody
}

func (t *trackingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := &trackedBody{r: resp.Body, c: resp.Body}
	resp.Body = b
	t.mu.Lock()
	t.bodies = append(t.bodies, b)
	t.mu.Unlock()
	return resp, nil
}

// manualDeadline is a context whose deadline passes when the test says so,
// without waiting for a clock.
type manualDeadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newManualDeadline() *manualDeadline {
	return &manualDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (c *manualDeadline) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *manualDeadline) Done() <-chan struct{}       { return c.done }
func (c *manualDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *manualDeadline) Value(key any) any           { return c.Context.Value(key) }
func (c *manualDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// loopback is a RoundTripper that sends every request, whatever its host,
// to the test server at addr over one pool of connections: a Transport over
// it sees as many hosts as the test makes up, and nothing leaves 127.0.0.1.
type loopback struct {
	addr string
	tr   *http.Transport
}

func newLoopback(t *testing.T, addr string) *loopback {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	t.Cleanup(tr.CloseIdleConnections)
	return &loopback{addr: addr, tr: tr}
}

func (l *loopback) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	u := *req.URL
	u.Host = l.addr
	out.URL, out.Host = &u, req.URL.Host
	return l.tr.RoundTrip(out)
}
