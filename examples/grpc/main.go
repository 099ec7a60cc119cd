// Command grpc calls a real gRPC server on loopback through the breaker's
// client interceptor, while the server fails for a while, and prints per
// second what the client sent, what the breaker shed and what came back.
//
// The server, gRPC's standard health service, runs in this process on
// 127.0.0.1 with a port the system picks, and answers Unavailable while it
// is down. By default the breaker reads a virtual clock that each call
// moves forward by 1/rate, so twenty seconds of traffic run in about one;
// with -realtime it reads the system clock and the calls are paced for
// real. It is a module of its own, because it needs gRPC:
//
//	cd examples/grpc && go run .
//	cd examples/grpc && go run . -realtime -rate 50
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

type config struct {
	rate     int           // calls per second
	healthy  time.Duration // before the server fails
	down     time.Duration // how long it fails
	after    time.Duration // after it heals
	realtime bool
	seed     uint64
}

func main() {
	cfg := config{rate: 50, healthy: 2 * time.Second, down: 8 * time.Second, after: 12 * time.Second, seed: 1}
	flag.IntVar(&cfg.rate, "rate", cfg.rate, "calls per second (1 to 1000)")
	flag.DurationVar(&cfg.healthy, "healthy", cfg.healthy, "time before the server starts failing")
	flag.DurationVar(&cfg.down, "down", cfg.down, "time the server answers Unavailable")
	flag.DurationVar(&cfg.after, "after", cfg.after, "time after the server heals")
	flag.BoolVar(&cfg.realtime, "realtime", false, "use the system clock and pace calls for real")
	flag.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the breaker's random source")
	flag.Parse()
	if _, err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "grpc:", err)
		os.Exit(1)
	}
}

// healthServer answers Unavailable while down is set, and counts the calls
// that reach it.
type healthServer struct {
	healthpb.UnimplementedHealthServer
	down     atomic.Bool
	received atomic.Int64
}

func (s *healthServer) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.received.Add(1)
	if s.down.Load() {
		return nil, status.Error(codes.Unavailable, "down for maintenance")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// virtualClock is moved by hand, one call at a time.
type virtualClock struct {
	clock.Clock // nil: breakers read Now alone
	now         atomic.Int64
}

func (c *virtualClock) Now() time.Time { return time.Unix(0, c.now.Load()) }

// tally counts the calls of one second, or of the whole run.
type tally struct{ sent, shed, ok, failed int }

func (t *tally) add(o tally) {
	t.sent += o.sent
	t.shed += o.shed
	t.ok += o.ok
	t.failed += o.failed
}

// report is what a run saw: per second and in all, what the server
// received, and the error of the last shed call.
type report struct {
	seconds  []tally
	total    tally
	received int64
	lastShed error
}

// run starts the server, makes the calls and prints what happened.
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
	health := &healthServer{}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	opts := []breaker.Option{breaker.WithProba(proba.NewSeeded(cfg.seed))}
	vclock := &virtualClock{}
	vclock.now.Store(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	if !cfg.realtime {
		opts = append(opts, breaker.WithClock(vclock))
	}
	// A program of its own would leave out WithRegistry, and its breakers
	// would live in breaker.DefaultRegistry(); a registry of the run's own
	// keeps it repeatable.
	interceptors, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithRegistry(breaker.MustNewRegistry(opts...)))
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(interceptors.Unary()))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	total := cfg.healthy + cfg.down + cfg.after
	step := time.Second / time.Duration(cfg.rate)
	fmt.Fprintf(out, "gRPC server on %s: healthy for %v, then Unavailable for %v, then healthy for %v; %d calls/s",
		ln.Addr(), cfg.healthy, cfg.down, cfg.after, cfg.rate)
	if !cfg.realtime {
		fmt.Fprintf(out, " on a virtual clock")
	}
	fmt.Fprintf(out, "\n\n%6s  %-7s %5s %5s %4s %7s\n", "second", "server", "sent", "shed", "ok", "failed")

	rep := &report{}
	var sec tally
	begin := time.Now()
	for at := time.Duration(0); at < total; at += step {
		health.down.Store(at >= cfg.healthy && at < cfg.healthy+cfg.down)
		if cfg.realtime {
			time.Sleep(time.Until(begin.Add(at)))
		}
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := client.Check(callCtx, &healthpb.HealthCheckRequest{})
		cancel()
		switch {
		case errors.Is(err, breaker.ErrServiceUnavailable): // status code Unavailable too
			sec.shed++
			rep.lastShed = err
		case err != nil:
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
			if health.down.Load() {
				state = "down"
			}
			fmt.Fprintf(out, "%6d  %-7s %5d %5d %4d %7d\n", at/time.Second+1, state, sec.sent, sec.shed, sec.ok, sec.failed)
			rep.seconds = append(rep.seconds, sec)
			rep.total.add(sec)
			sec = tally{}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	rep.received = health.received.Load()
	fmt.Fprintf(out, "\nthe client sent %d calls and the breaker shed %d; the server received %d\n",
		rep.total.sent, rep.total.shed, rep.received)
	if rep.lastShed != nil {
		fmt.Fprintf(out, "the last shed call said: %v\n", status.Convert(rep.lastShed).Message())
	}
	return rep, nil
}
