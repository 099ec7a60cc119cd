// Command statuspage serves the live page of a registry's breakers
// (package statuspage) while three dependencies behind them misbehave:
// payments fails outright for 15 s of every 45 s and heals, inventory fails
// half its calls, asked at four criticality levels, and search fails now and
// then. The dependencies run in this process; nothing leaves the machine.
//
// It listens on loopback and prints the page's URL; open it in a browser
// and watch payments' drop probability climb and fall:
//
//	go run ./examples/statuspage
//	go run ./examples/statuspage -addr 127.0.0.1:8080 -rate 100
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/statuspage"
)

// path is where the page is mounted.
const path = "/debug/breakers"

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to serve the page on (port 0: one the system picks)")
	rate := flag.Int("rate", 50, "calls per second to each dependency (1 to 1000)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, *rate, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "statuspage:", err)
		os.Exit(1)
	}
}

// run serves the page on addr and calls the dependencies at rate calls per
// second each until ctx is done.
func run(ctx context.Context, addr string, rate int, out io.Writer) error {
	if rate < 1 || rate > 1000 {
		return fmt.Errorf("-rate %d: must be between 1 and 1000", rate)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	d := newDemo(clock.New(), rand.Uint64())
	srv := &http.Server{Handler: d.mux(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(out, "the breakers' page: http://%s%s (Ctrl-C stops)\n", ln.Addr(), path)

	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(shutdown)
		case err := <-served:
			return err
		case <-tick.C:
			d.tick()
		}
	}
}

// demo is a registry of breakers in front of three dependencies, and the
// page that shows them.
type demo struct {
	clock    clock.Clock
	start    time.Time
	registry *breaker.Registry
	page     *statuspage.Page
	deps     []*dependency
	calls    int
}

// newDemo returns a demo whose breakers and page read c, and whose
// dependencies fail at random from seed.
func newDemo(c clock.Clock, seed uint64) *demo {
	reg := breaker.MustNewRegistry(breaker.WithClock(c))
	rnd := rand.New(rand.NewPCG(seed, 0))
	return &demo{
		clock:    c,
		start:    c.Now(),
		registry: reg,
		page:     statuspage.MustNew(reg, statuspage.WithClock(c)),
		deps: []*dependency{
			{name: "payments", fails: func(t time.Duration) error {
				if t%(45*time.Second) >= 20*time.Second && t%(45*time.Second) < 35*time.Second {
					return errors.New("payments: connect: connection refused")
				}
				return nil
			}},
			{name: "inventory", leveled: true, fails: func(time.Duration) error {
				if rnd.Float64() < 0.5 {
					return errors.New("inventory: timeout after 250ms")
				}
				return nil
			}},
			{name: "search", fails: func(time.Duration) error {
				if rnd.Float64() < 0.02 {
					return errors.New("search: HTTP 502 Bad Gateway")
				}
				return nil
			}},
		},
	}
}

// mux serves the page at path.
func (d *demo) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(path, d.page)
	mux.Handle("/", http.RedirectHandler(path, http.StatusFound))
	return mux
}

// dependency fails as fails says, given the time since the demo started.
type dependency struct {
	name    string
	leveled bool // calls ask at the four criticality levels in turn
	fails   func(since time.Duration) error
}

// tick calls each dependency once through its breaker.
func (d *demo) tick() {
	since := d.clock.Now().Sub(d.start)
	d.calls++
	for _, dep := range d.deps {
		ctx := context.Background()
		if dep.leveled {
			ctx = withLevel(ctx, d.calls)
		}
		_ = d.registry.Get(dep.name).DoCtx(ctx, func() error { return dep.fails(since) })
	}
}

// withLevel returns ctx asking at the criticality level of the i-th call:
// the four levels in turn.
func withLevel(ctx context.Context, i int) context.Context {
	levels := [...]criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}
	return criticality.With(ctx, levels[i%len(levels)])
}
