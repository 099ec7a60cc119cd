package redisbreaker_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// holdingProxy forwards connections to a Redis server on 127.0.0.1 and,
// while held, keeps the server's replies back: a Redis too slow to
// answer, whose commands still run.
type holdingProxy struct {
	addr string
	mu   sync.Mutex
	open chan struct{} // closed while replies flow
}

func startHoldingProxy(t *testing.T, target string) *holdingProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &holdingProxy{addr: l.Addr().String(), open: make(chan struct{})}
	close(p.open)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); p.release(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() { defer wg.Done(); p.copyHeld(c, s); _ = c.Close() }()
		}
	}()
	return p
}

// copyHeld copies the server's replies to the client, waiting while the
// proxy holds them.
func (p *holdingProxy) copyHeld(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			open := p.open
			p.mu.Unlock()
			<-open
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *holdingProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

func (p *holdingProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// heldTimeout bounds the rounds of TestSharer_Sync_slowRedis that wait
// for Redis: far longer than the calls made meanwhile take, even under
// -race on a busy machine.
const heldTimeout = 30 * time.Second

// A Redis too slow for a round: calls never wait for it, a round that
// times out leaves its counts in the fleet's (its commands ran) without
// adding them twice, and no process drops out of the fleet's evidence.
func TestSharer_Sync_slowRedis(t *testing.T) {
	srv := startRedis(t)
	proxy := startHoldingProxy(t, srv.addr)
	clk := newVirtualClock()
	const processes = 20
	type proc struct {
		b      breaker.Breaker
		sharer *redisbreaker.Sharer
		pub    map[int64]fleet.Bucket
	}
	procs := make([]*proc, processes)
	for i := range procs {
		rdb := redis.NewClient(&redis.Options{Addr: proxy.addr, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: heldTimeout, ReadTimeout: heldTimeout, WriteTimeout: heldTimeout})
		t.Cleanup(func() { _ = rdb.Close() })
		b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(clk))
		s, err := redisbreaker.New(rdb, redisbreaker.WithClock(clk), redisbreaker.WithPrefix("test:"), redisbreaker.WithLogger(slog.New(slog.DiscardHandler)),
			redisbreaker.WithTimeout(heldTimeout))
		require.NoError(t, err)
		require.NoError(t, s.Share(b))
		t.Cleanup(func() { _ = s.Close() })
		procs[i] = &proc{b: b, sharer: s, pub: make(map[int64]fleet.Bucket)}
	}
	calls := func() {
		for _, p := range procs {
			for j := range 5 {
				if c, err := p.b.Allow(); err == nil {
					if j == 0 {
						c.Reject("boom")
					} else {
						c.Accept()
					}
				}
			}
		}
	}
	// syncAll runs a round of every process at once, each bounded by
	// timeout, and notes what each published.
	syncAll := func(timeout time.Duration) []error {
		errs := make([]error, processes)
		var wg sync.WaitGroup
		for i, p := range procs {
			m, _ := fleet.Of(p.b)
			h := m.History()
			for j, b := range h.Buckets {
				p.pub[h.Newest-int64(len(h.Buckets))+1+int64(j)] = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				errs[i] = p.sharer.Sync(ctx)
			}()
		}
		wg.Wait()
		return errs
	}
	check := func(msg string) {
		t.Helper()
		want := make(map[int64]fleet.Bucket)
		for _, p := range procs {
			for n, b := range p.pub {
				if b != (fleet.Bucket{}) {
					w := want[n]
					want[n] = fleet.Bucket{Successes: w.Successes + b.Successes, Failures: w.Failures + b.Failures, Drops: w.Drops + b.Drops}
				}
			}
		}
		got, counted := gridCounts(t, srv.client(), "payments")
		require.Equal(t, want, got, msg)
		for k, n := range counted {
			assert.Equal(t, int64(processes), n, "%s: block %d counts every process once", msg, k)
		}
	}

	calls()
	clk.advance(span)
	for _, err := range syncAll(defaultTestTimeout) {
		require.NoError(t, err)
	}
	check("Redis answering")

	// Redis holds its answers: the rounds wait, the calls do not.
	proxy.hold()
	done := make(chan []error)
	calls()
	clk.advance(span)
	go func() { done <- syncAll(heldTimeout) }()
	for range 1000 {
		calls() // calls go on while every process's round waits for Redis
	}
	select {
	case <-done:
		t.Fatal("the rounds finished while Redis held its answers")
	default:
	}
	proxy.release()
	for _, err := range <-done {
		require.NoError(t, err, "a slow round is a late round, not a failed one")
	}
	clk.advance(span)
	for _, err := range syncAll(defaultTestTimeout) {
		require.NoError(t, err)
	}
	check("rounds that waited")

	// Slower than the rounds' timeout: they fail, but their commands ran;
	// the next rounds add what is new, nothing twice.
	proxy.hold()
	calls()
	clk.advance(span)
	for _, err := range syncAll(50 * time.Millisecond) {
		require.ErrorIs(t, err, redisbreaker.ErrUnreachable)
	}
	proxy.release()
	// go-redis ends the exchanges the rounds gave up on by its own
	// timeouts, a moment after the rounds returned, and until then a round
	// skips the shard ("the shard's round before is still waiting on
	// Redis"), as Sync documents: the next rounds come once they ended.
	for _, p := range procs {
		p.sharer.WaitExchanges()
	}
	calls()
	clk.advance(span)
	for _, err := range syncAll(defaultTestTimeout) {
		require.NoError(t, err, "the rounds after those that timed out")
	}
	check("rounds that timed out")
}
