// Command httpclient calls a real HTTP server on loopback through an
// http.Client whose Transport is httpbreaker's, while the server fails for a
// while, and prints per second what the client sent, what the breaker
// dropped and what came back. The Transport keeps a breaker per host, counts
// 5xx answers as failures and never sends a dropped request.
//
// The server runs in this process on 127.0.0.1 with a port the system picks.
// By default the breaker reads a virtual clock that each request moves
// forward by 1/rate, so twenty seconds of traffic run in about one; with
// -realtime it reads the system clock and the requests are paced for real.
//
//	go run ./examples/httpclient
//	go run ./examples/httpclient -realtime -rate 50
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

type config struct {
	rate     int           // requests per second
	healthy  time.Duration // before the server fails
	down     time.Duration // how long it fails
	after    time.Duration // after it heals
	realtime bool
	seed     uint64
}

func main() {
	cfg := config{rate: 50, healthy: 2 * time.Second, down: 8 * time.Second, after: 12 * time.Second, seed: 1}
	flag.IntVar(&cfg.rate, "rate", cfg.rate, "requests per second (1 to 1000)")
	flag.DurationVar(&cfg.healthy, "healthy", cfg.healthy, "time before the server starts failing")
	flag.DurationVar(&cfg.down, "down", cfg.down, "time the server answers 503")
	flag.DurationVar(&cfg.after, "after", cfg.after, "time after the server heals")
	flag.BoolVar(&cfg.realtime, "realtime", false, "use the system clock and pace requests for real")
	flag.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the breaker's random source")
	flag.Parse()
	if _, err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "httpclient:", err)
		os.Exit(1)
	}
}

// server is a dependency that answers 503 while down is set.
type server struct {
	down     atomic.Bool
	received atomic.Int64 // requests that reached the server
}

func (s *server) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.received.Add(1)
	if s.down.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

// virtualClock is moved by hand, one request at a time.
// virtualClock is the demonstration's time. Breakers read Now alone; the
// embedded clock.Clock, nil, stands for the methods they never call.
type virtualClock struct {
	clock.Clock
	now atomic.Int64
}

func (c *virtualClock) Now() time.Time { return time.Unix(0, c.now.Load()) }

// counts are the requests of one second, or of the whole run.
type counts struct{ sent, dropped, ok, failed int }

func (c *counts) add(o counts) {
	c.sent += o.sent
	c.dropped += o.dropped
	c.ok += o.ok
	c.failed += o.failed
}

// report is what a run saw: per second and in all, and what the server
// received.
type report struct {
	seconds  []counts
	total    counts
	received int64
}

// run starts the server, makes the requests and prints what happened.
func run(ctx context.Context, cfg config, out io.Writer) (*report, error) {
	if cfg.rate < 1 || cfg.rate > 1000 {
		return nil, fmt.Errorf("-rate %d: must be between 1 and 1000", cfg.rate)
	}
	if cfg.healthy < 0 || cfg.down < 0 || cfg.after < 0 {
		return nil, errors.New("-healthy, -down and -after must not be negative")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &server{}
	httpServer := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = httpServer.Serve(ln) }()
	defer httpServer.Close()
	url := "http://" + ln.Addr().String() + "/"

	opts := []breaker.Option{breaker.WithProba(proba.NewSeeded(cfg.seed))}
	vclock := &virtualClock{}
	vclock.now.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	if !cfg.realtime {
		opts = append(opts, breaker.WithClock(vclock))
	}
	// One breaker per host, made with opts; 5xx and 429 answers count as
	// failures, and a dropped request is never sent. A program of its own
	// would leave out WithRegistry, and its breakers would live in
	// breaker.DefaultRegistry(); a registry of the run's own keeps it
	// repeatable.
	transport, err := httpbreaker.NewTransport(nil, httpbreaker.WithRegistry(breaker.MustNewRegistry(opts...)))
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()

	// get returns the status, or the error of a request that got none.
	get := func() (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}

	total := cfg.healthy + cfg.down + cfg.after
	step := time.Second / time.Duration(cfg.rate)
	fmt.Fprintf(out, "server on %s: healthy for %v, then 503 for %v, then healthy for %v; %d requests/s",
		ln.Addr(), cfg.healthy, cfg.down, cfg.after, cfg.rate)
	if !cfg.realtime {
		fmt.Fprintf(out, " on a virtual clock")
	}
	fmt.Fprintf(out, "\n\n%6s  %-7s %5s %8s %4s %7s\n", "second", "server", "sent", "dropped", "ok", "failed")

	rep := &report{}
	var sec counts
	var lastDrop error
	begin := time.Now()
	for at := time.Duration(0); at < total; at += step {
		srv.down.Store(at >= cfg.healthy && at < cfg.healthy+cfg.down)
		if cfg.realtime {
			time.Sleep(time.Until(begin.Add(at)))
		}
		code, err := get()
		switch {
		case errors.Is(err, breaker.ErrServiceUnavailable): // inside http.Client's *url.Error
			sec.dropped++
			lastDrop = err
		case err != nil, code >= 500:
			sec.sent++
			sec.failed++
		default:
			sec.sent++
			sec.ok++
		}
		if !cfg.realtime {
			vclock.now.Add(int64(step))
		}
		if next := at + step; next/time.Second != at/time.Second || next >= total {
			state := "up"
			if srv.down.Load() {
				state = "down"
			}
			fmt.Fprintf(out, "%6d  %-7s %5d %8d %4d %7d\n", at/time.Second+1, state, sec.sent, sec.dropped, sec.ok, sec.failed)
			rep.seconds = append(rep.seconds, sec)
			rep.total.add(sec)
			sec = counts{}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	rep.received = srv.received.Load()
	fmt.Fprintf(out, "\nthe client sent %d requests and dropped %d; the server received %d\n",
		rep.total.sent, rep.total.dropped, rep.received)
	if lastDrop != nil {
		fmt.Fprintf(out, "the last drop said: %v\n", lastDrop)
	}
	return rep, nil
}
