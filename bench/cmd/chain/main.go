// Command chain drives a chain of services, client → A → B → C, on the
// wall clock, over HTTP, gRPC or Connect, with C down for a while, and
// prints what each breaker of the chain did.
//
// Each of client, A and B has a breaker.Registry of its own, with the
// default options, as separate processes would; A and B are servers on
// 127.0.0.1, each guarded on the way in (httpbreaker's Handler,
// grpcbreaker's server interceptors, connectbreaker's HandlerInterceptor)
// and calling the next through a guarded client (httpbreaker's Transport,
// the client interceptors); C is a plain server, which fails every call
// while it is down. A handler whose call fails answers with a failure of
// its own. The client sends -rate calls a second, evenly spaced, each
// with a 2 s deadline: -healthy, then C down for -outage, then -healed.
// With -fault hang, C answers no call while down, until its caller gives
// up (the client's deadline, passed on down the chain).
//
// Usage, from bench/ (the peer module):
//
//	GOWORK=off go run ./cmd/chain [-protocols http,grpc,connect] [-rates 20,200]
//	    [-healthy 5s] [-outage 30s] [-healed 10s] [-runs 1] [-fault error|hang]
//
// make bench-chain runs it from the repository's root.
//
// A row per protocol, rate and run: each breaker's highest drop
// probability during the outage (sampled every 10 ms); the share of the
// outage after its first second in which B's breaker for C dropped with a
// probability of 0.9 or more; the breakers that started and stopped
// shedding, and how often, over the run; the share of the outage's calls
// that reached C; the client's 99th percentile latency during the outage
// after its first second; and the time from healing to the end of the
// first 100 ms slot from which at least 95 % of the client's calls
// succeeded in 3 slots in a row.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/bench/internal/figures"
	"github.com/srebreaker/srebreaker/breaker"
)

// config is what the flags set.
type config struct {
	protocols               []string
	rates                   []int
	healthy, outage, healed time.Duration
	runs                    int
	hang                    bool // C hangs while down, rather than failing
}

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "chain:", err)
		os.Exit(2)
	}
}

// run parses the flags and runs the chain for each protocol and rate, as
// many times as asked, printing a row of figures per run.
func run(args []string, stdout, stderr io.Writer) error {
	cfg := config{healthy: 5 * time.Second, outage: 30 * time.Second, healed: 10 * time.Second, runs: 1}
	protocols, rates := "http,grpc,connect", "20,200"
	fs := flag.NewFlagSet("chain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&protocols, "protocols", protocols, "comma-separated: http, grpc, connect")
	fs.StringVar(&rates, "rates", rates, "comma-separated calls per second the client sends (1 to 2000)")
	fs.DurationVar(&cfg.healthy, "healthy", cfg.healthy, "how long C is up first")
	fs.DurationVar(&cfg.outage, "outage", cfg.outage, "how long C is then down (at least 2s)")
	fs.DurationVar(&cfg.healed, "healed", cfg.healed, "how long C is up again")
	fs.IntVar(&cfg.runs, "runs", cfg.runs, "how many times to run each protocol and rate")
	fault := "error"
	fs.StringVar(&fault, "fault", fault, `how C is down: "error" (it fails every call at once) or "hang" (it answers none)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.parse(protocols, rates); err != nil {
		return err
	}
	switch fault {
	case "error":
	case "hang":
		cfg.hang = true
	default:
		return fmt.Errorf(`-fault %q: must be "error" or "hang"`, fault)
	}
	down := "down"
	if cfg.hang {
		down = "hanging"
	}
	fmt.Fprintf(stdout, "chain client → A → B → C, default options, on the wall clock: healthy %v, C %s %v, healed %v\n\n",
		cfg.healthy, down, cfg.outage, cfg.healed)
	fmt.Fprintln(stdout, "| protocol | calls/s | run | highest drop probability: client's, A's Handler, A's for B, B's Handler, B's for C | "+
		"B's for C ≥ 0.9 | started/stopped shedding | reached C | client p99 | 95 % succeed after healing |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|")
	for _, proto := range cfg.protocols {
		for _, rate := range cfg.rates {
			for r := 1; r <= cfg.runs; r++ {
				res, err := play(proto, rate, cfg)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "| %s | %d | %d | %s |\n", proto, rate, r, strings.Join(res.cells(cfg), " | "))
			}
		}
	}
	return nil
}

func (c *config) parse(protocols, rates string) error {
	for _, p := range strings.Split(protocols, ",") {
		if _, ok := wires[p]; !ok {
			return fmt.Errorf("-protocols %q: %q is none of http, grpc, connect", protocols, p)
		}
		c.protocols = append(c.protocols, p)
	}
	for _, s := range strings.Split(rates, ",") {
		r, err := strconv.Atoi(s)
		if err != nil || r < 1 || r > 2000 {
			return fmt.Errorf("-rates %q: %q is not a rate between 1 and 2000", rates, s)
		}
		c.rates = append(c.rates, r)
	}
	switch {
	case c.runs < 1:
		return fmt.Errorf("-runs %d: at least 1", c.runs)
	case c.healthy < 0 || c.healed <= 0:
		return fmt.Errorf("-healthy %v, -healed %v: must not be negative, and healed positive", c.healthy, c.healed)
	case c.outage < 2*time.Second:
		return fmt.Errorf("-outage %v: at least 2s", c.outage)
	}
	return nil
}

// The breakers of the chain, in the order the table gives them.
const (
	clientOut = iota // the client's, for A
	aIn              // A's server's
	aOut             // A's, for B
	bIn              // B's server's
	bOut             // B's, for C
	roles
)

var roleNames = [roles]string{"client's", "A's Handler", "A's for B", "B's Handler", "B's for C"}

// process is the breakers of one process of the chain: a registry, and
// the shedding starts and stops its breakers reported.
type process struct {
	reg    *breaker.Registry
	mu     sync.Mutex
	starts map[string]int // guarded by mu; per breaker name
	stops  map[string]int // guarded by mu
}

func newProcess() *process {
	p := &process{starts: map[string]int{}, stops: map[string]int{}}
	p.reg = breaker.MustNewRegistry(breaker.WithListener(func(e breaker.Event) {
		if e.Kind != breaker.SheddingChanged {
			return
		}
		p.mu.Lock()
		if e.Shedding {
			p.starts[e.Breaker]++
		} else {
			p.stops[e.Breaker]++
		}
		p.mu.Unlock()
	}))
	return p
}

// role returns the breaker of p that is in, the server's, or out, the
// client's (nil until it was made), and its name.
func (p *process) role(in bool) (breaker.Breaker, string) {
	var found breaker.Breaker
	var name string
	p.reg.Range(func(n string, b breaker.Breaker) bool {
		if strings.HasPrefix(n, "server") == in {
			found, name = b, n
			return false
		}
		return true
	})
	return found, name
}

// dependency is C: while down, it fails every call, or, when hang is
// set, answers none until its caller gives up.
type dependency struct {
	hang    bool
	down    atomic.Bool
	reached atomic.Int64
}

// hangs reports whether C hangs now, after waiting for ctx, the call's,
// to end.
func (c *dependency) hangs(ctx context.Context) bool {
	if !c.hang || !c.down.Load() {
		return false
	}
	<-ctx.Done()
	return true
}

// wire sets up the chain over one protocol: C, then B calling it, then A
// calling B, each with its process's registry, and returns the client's
// call. Everything it starts stops with stop.
type wire func(c *dependency, a, b, client *process) (call func(deadline time.Duration) error, stop func(), err error)

var wires = map[string]wire{"http": httpChain, "grpc": grpcChain, "connect": connectChain}

// call is one call of the client: when it was due since the start, how
// long it took, and whether it succeeded.
type call struct {
	due, took time.Duration
	ok        bool
}

// result is one run.
type result struct {
	calls          []call
	maxDrop        [roles]float64
	bHigh, bOutage int // samples of B's breaker for C after the outage's first second: ≥ 0.9, all
	events         []string
	reached, sent  int64 // calls that reached C during the outage; the client's calls then
}

// play runs the chain over proto once.
func play(proto string, rate int, cfg config) (*result, error) {
	c := &dependency{hang: cfg.hang}
	procs := [3]*process{newProcess(), newProcess(), newProcess()} // client, A, B
	do, stop, err := wires[proto](c, procs[1], procs[2], procs[0])
	if err != nil {
		return nil, err
	}
	defer stop()
	res := &result{}
	total := cfg.healthy + cfg.outage + cfg.healed
	n := int(int64(total) * int64(rate) / int64(time.Second))
	calls := make([]call, n)
	var wg sync.WaitGroup
	start := time.Now()
	sampled := make(chan struct{})
	go func() { // the drop probabilities, every 10 ms
		defer close(sampled)
		for t := time.Since(start); t < total; t = time.Since(start) {
			if t >= cfg.healthy && t < cfg.healthy+cfg.outage {
				res.sample(procs, t-cfg.healthy >= time.Second)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var reachedAt int64
	outage, healed := false, false
	for i := 0; i < n; {
		now := time.Since(start)
		if !outage && now >= cfg.healthy {
			outage, reachedAt = true, c.reached.Load()
			c.down.Store(true)
		}
		if !healed && now >= cfg.healthy+cfg.outage {
			healed = true
			c.down.Store(false)
			res.reached = c.reached.Load() - reachedAt
		}
		for ; i < n; i++ {
			due := time.Duration(int64(i) * int64(time.Second) / int64(rate))
			if due > now {
				break
			}
			if due >= cfg.healthy && due < cfg.healthy+cfg.outage {
				res.sent++
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				t0 := time.Now()
				err := do(2 * time.Second)
				calls[i] = call{due: due, took: time.Since(t0), ok: err == nil}
			}(i)
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	<-sampled
	res.calls = calls
	for i, p := range procs {
		p.mu.Lock()
		for name, k := range p.starts {
			role := [3][2]int{{clientOut, clientOut}, {aOut, aIn}, {bOut, bIn}}[i][b2i(strings.HasPrefix(name, "server"))]
			res.events = append(res.events, fmt.Sprintf("%s %d/%d", roleNames[role], k, p.stops[name]))
		}
		p.mu.Unlock()
	}
	slices.Sort(res.events)
	return res, nil
}

// sample notes the drop probabilities of the chain's breakers now;
// counted says whether the outage's first second is over.
func (r *result) sample(procs [3]*process, counted bool) {
	at := [roles]struct {
		p  *process
		in bool
	}{{procs[0], false}, {procs[1], true}, {procs[1], false}, {procs[2], true}, {procs[2], false}}
	for i, x := range at {
		b, _ := x.p.role(x.in)
		if b == nil {
			continue
		}
		d := b.Stats().DropProbability
		r.maxDrop[i] = max(r.maxDrop[i], d)
		if i == bOut && counted {
			r.bOutage++
			if d >= 0.9 {
				r.bHigh++
			}
		}
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// slotCounts are the client's calls of a 100 ms slot.
type slotCounts struct{ offered, succeeded int }

// cells writes the figures of a run.
func (r *result) cells(cfg config) []string {
	drops := make([]string, roles)
	for i, d := range r.maxDrop {
		drops[i] = fmt.Sprintf("%.2f", d)
	}
	var outageTook []time.Duration
	healedSlots := make([]slotCounts, (cfg.healed+figures.Slot-1)/figures.Slot)
	healAt := cfg.healthy + cfg.outage
	for _, c := range r.calls {
		if c.due >= cfg.healthy+time.Second && c.due < healAt {
			outageTook = append(outageTook, c.took)
		}
		if c.due >= healAt {
			s := &healedSlots[(c.due-healAt)/figures.Slot]
			s.offered++
			if c.ok {
				s.succeeded++
			}
		}
	}
	p99 := "–"
	if len(outageTook) > 0 {
		slices.Sort(outageTook)
		p99 = fmt.Sprintf("%.1f ms", float64(outageTook[len(outageTook)*99/100])/float64(time.Millisecond))
	}
	recovered := fmt.Sprintf("not within %v", cfg.healed)
	if d, ok := figures.SustainedFrom(healedSlots, func(s slotCounts) int { return s.offered },
		func(s slotCounts) bool { return figures.Pct(s.succeeded, s.offered) >= 95 }); ok {
		recovered = fmt.Sprintf("%.1f s", d.Seconds())
	}
	events := "none"
	if len(r.events) > 0 {
		events = strings.Join(r.events, ", ")
	}
	return []string{
		strings.Join(drops, ", "),
		fmt.Sprintf("%.0f %%", figures.Pct(r.bHigh, r.bOutage)),
		events,
		fmt.Sprintf("%.1f %%", figures.Pct(int(r.reached), int(r.sent))),
		p99,
		recovered,
	}
}
