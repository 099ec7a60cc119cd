// Command fleet runs a handful of clients, each with a breaker of its own
// as separate processes would have, against a flaky HTTP server on
// loopback, sharing their breakers' bucket histories through a real Redis with
// redisbreaker, and prints what each client admitted while the server was
// healthy, down and healed.
//
// Each client calls too rarely for its breaker to shed a short outage on
// its own evidence (2 calls a second by default: 6 failures in a 3 s
// outage, against the successes it saw before); together they call often
// enough, and with their histories shared every client's breaker sheds on the
// fleet's. Run it with -share=false to see each client alone let the whole
// outage through.
//
// It needs redis-server (Debian's package redis-server): by default it
// starts one on a free port of 127.0.0.1, without persistence, and stops
// it at the end; -redis host:port uses a running one instead (keys under
// the prefix "srebreaker-example:", which expire on their own).
//
//	go run ./examples/fleet
//	go run ./examples/fleet -clients 8 -rate 2 -share=false
//	go run ./examples/fleet -redis 127.0.0.1:6379
//
// The run takes -healthy + -down + -healed of real time (9 s by default).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

type config struct {
	redisAddr string // empty: start a redis-server
	clients   int
	rate      float64 // requests per second of each client
	healthy   time.Duration
	down      time.Duration
	healed    time.Duration
	share     bool
}

func main() {
	cfg := config{}
	flag.StringVar(&cfg.redisAddr, "redis", "", "`host:port` of a running Redis; empty starts a redis-server on a free loopback port")
	flag.IntVar(&cfg.clients, "clients", 5, "clients, each with its own breaker (1 to 100)")
	flag.Float64Var(&cfg.rate, "rate", 2, "requests per second of each client (0.5 to 100)")
	flag.DurationVar(&cfg.healthy, "healthy", 3*time.Second, "how long the server answers 200 first")
	flag.DurationVar(&cfg.down, "down", 3*time.Second, "how long it then answers 503")
	flag.DurationVar(&cfg.healed, "healed", 3*time.Second, "how long it answers 200 again")
	flag.BoolVar(&cfg.share, "share", true, "share the breakers' histories through Redis; false leaves each client on its own")
	flag.Parse()
	if _, err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// phases of the server, in order.
var phaseNames = [...]string{"healthy", "down", "healed"}

// tally is what one client did in one phase.
type tally struct{ offered, admitted, dropped int }

// report is what each client did in each phase, and what the server saw.
type report struct {
	clients  [][len(phaseNames)]tally
	received [len(phaseNames)]int64 // requests that reached the server
}

func (c config) validate() error {
	switch {
	case c.clients < 1 || c.clients > 100:
		return fmt.Errorf("-clients %d: must be from 1 to 100", c.clients)
	case !(c.rate >= 0.5 && c.rate <= 100):
		return fmt.Errorf("-rate %v: must be from 0.5 to 100", c.rate)
	case c.healthy < 0 || c.down < 0 || c.healed < 0 || c.healthy+c.down+c.healed > time.Hour:
		return errors.New("-healthy, -down and -healed: must not be negative, and add up to at most 1h")
	}
	return nil
}

// run starts the server (and Redis, without cfg.redisAddr), runs the
// clients and prints the report to out.
func run(ctx context.Context, cfg config, out io.Writer) (*report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	addr := cfg.redisAddr
	if addr == "" {
		srv, err := startRedis(ctx)
		if err != nil {
			return nil, err
		}
		defer srv.stop()
		addr = srv.addr
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redis at %s: %w", addr, err)
	}

	rep := &report{clients: make([][len(phaseNames)]tally, cfg.clients)}
	start := time.Now()
	phaseAt := func(t time.Time) int {
		switch d := t.Sub(start); {
		case d < cfg.healthy:
			return 0
		case d < cfg.healthy+cfg.down:
			return 1
		}
		return 2
	}
	server, err := startServer(func(r *http.Request) int {
		p := phaseAt(time.Now())
		atomic.AddInt64(&rep.received[p], 1)
		if p == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	if err != nil {
		return nil, err
	}
	defer server.Close()

	fmt.Fprintf(out, "%d clients at %v requests/s each, histories shared through Redis: %v\n", cfg.clients, cfg.rate, cfg.share)
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	end := start.Add(cfg.healthy + cfg.down + cfg.healed)
	var wg sync.WaitGroup
	errs := make([]error, cfg.clients)
	for i := range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = client(ctx, cfg, i, rdb, logger, server.url, end, func(t time.Time, admitted bool) {
				// Each client writes its own row: no lock needed.
				c := &rep.clients[i][phaseAt(t)]
				c.offered++
				if admitted {
					c.admitted++
				} else {
					c.dropped++
				}
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	printReport(out, rep)
	return rep, nil
}

// client is one process of the fleet: a breaker of its own, in an
// httpbreaker Transport, shared through a redisbreaker Sharer of its own.
// It calls url at cfg.rate until end, and records each call.
func client(ctx context.Context, cfg config, i int, rdb redis.UniversalClient, logger *slog.Logger,
	url string, end time.Time, record func(t time.Time, admitted bool)) error {
	registry := breaker.MustNewRegistry()
	transport, err := httpbreaker.NewTransport(http.DefaultTransport, httpbreaker.WithRegistry(registry),
		httpbreaker.WithKey(func(*http.Request) string { return "flaky-server" }))
	if err != nil {
		return err
	}
	if cfg.share {
		sharer, err := redisbreaker.New(rdb, redisbreaker.WithPrefix("srebreaker-example:"), redisbreaker.WithLogger(logger))
		if err != nil {
			return err
		}
		if err := sharer.Share(registry.Get("flaky-server")); err != nil {
			return err
		}
		if err := sharer.Start(); err != nil {
			return err
		}
		defer sharer.Close()
	}
	httpClient := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	every := time.Duration(float64(time.Second) / cfg.rate)
	// Clients start apart, so that their calls spread over the second.
	next := time.Now().Add(time.Duration(i) * every / time.Duration(cfg.clients))
	for next.Before(end) {
		time.Sleep(time.Until(next))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := httpClient.Do(req)
		switch {
		case errors.Is(err, breaker.ErrServiceUnavailable):
			record(next, false)
		case err != nil:
			return err
		default:
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			record(next, true)
		}
		next = next.Add(every)
	}
	return nil
}

// printReport prints per client and phase the calls admitted of those
// offered, then the fleet's, and what reached the server.
func printReport(out io.Writer, rep *report) {
	fmt.Fprintf(out, "\n%-8s", "client")
	for _, name := range phaseNames {
		fmt.Fprintf(out, " %20s", name+" admitted")
	}
	fmt.Fprintln(out)
	var fleet [len(phaseNames)]tally
	for i, phases := range rep.clients {
		fmt.Fprintf(out, "%-8d", i+1)
		for p, t := range phases {
			fmt.Fprintf(out, " %20s", fmt.Sprintf("%d of %d", t.admitted, t.offered))
			fleet[p].offered += t.offered
			fleet[p].admitted += t.admitted
			fleet[p].dropped += t.dropped
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "%-8s", "all")
	for _, t := range fleet {
		fmt.Fprintf(out, " %20s", fmt.Sprintf("%d of %d", t.admitted, t.offered))
	}
	fmt.Fprintf(out, "\n\nthe server received %d calls while down, of %d offered\n", rep.received[1], fleet[1].offered)
}

// httpServer is the flaky server, on a loopback port.
type httpServer struct {
	url string
	srv *http.Server
}

func (s *httpServer) Close() { _ = s.srv.Close() }

// startServer serves every request with the status code status returns.
func startServer(status func(r *http.Request) int) (*httpServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status(r))
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }() // returns when Close closes the listener
	return &httpServer{url: "http://" + l.Addr().String() + "/", srv: srv}, nil
}
