// Command hang drives srebreaker and the other Go breakers, each at its
// defaults, through a black hole on the wall clock, one library after
// another, and prints the figures of the simulator's blackhole scenario for
// each (docs/design/behaviour.md, "Hangs and slowdowns").
//
// The scenario is the simulator's blackhole, scaled so that a library's run
// takes 15 s: 200 calls/s offered, evenly spaced, each in a goroutine of its
// own with a client timeout of 5 s; the dependency, a function in the
// process, answers each call in 5 ms for 3 s (healthy), then answers none
// for 6 s (hang): a call made then blocks until its timeout, even after the
// dependency healed, and fails with context.DeadlineExceeded; then it
// answers in 5 ms again for 6 s (healed). Nothing fails outright: a breaker
// hears of the hang from the calls it has admitted and not yet heard back
// from, or from the timeouts.
//
// Usage, from bench/ (the peer module):
//
//	GOWORK=off go run ./cmd/hang [-runs 1] [-rate 200] [-timeout 5s]
//	    [-healthy 3s] [-hang 6s] [-healed 6s] [-libs srebreaker,failsafe-adaptive,...]
//
// Each library is asked through its two-step API (ask, then report the
// outcome, nil error for a success) as the peer benchmarks ask it
// (bench/libs_test.go): srebreaker's Allow and Accept/Reject,
// failsafe-go's TryAcquirePermit and RecordSuccess/RecordFailure (its
// adaptivethrottler and its circuitbreaker), gobreaker's
// TwoStepCircuitBreaker, go-zero's Allow and Accept/Reject, aegis's sre
// Allow and MarkSuccess/MarkFailed. Each run takes the libraries in turn,
// each with a breaker of its own, starting one library further on with each
// run so that none always runs first.
//
// Each call is counted by the time it was due, in its phase and in the
// phase's 100 ms slot, as bench/cmd/realtime counts them. The figures: the
// time from the start of the hang to the end of the first slot from which
// at least 90 % of the calls were dropped in 3 slots in a row (sustained);
// the share of the hang's calls admitted, each of which reached the
// dependency and waited out the timeout; the most calls admitted and not
// yet ended at once; the time from healing to the end of the first slot
// from which at least 95 % were admitted, sustained; the calls dropped
// while healthy. The last columns are how late a call was asked about at
// worst, behind its due time, and the share of the calls asked about 10 ms
// late or more: a busy machine makes the run's timings unreliable.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/srebreaker/srebreaker/bench/internal/figures"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
)

// slot is the resolution of the timings, as in the simulator.
const slot = figures.Slot

// late is how far behind its due time a call is asked about to count as
// late.
const late = 10 * time.Millisecond

// latency is how long the dependency takes to answer while it is healthy.
const latency = 5 * time.Millisecond

// The phases of the black hole, in the order they run.
const (
	healthy = iota
	hang
	healed
	phaseCount
)

var phaseNames = [phaseCount]string{"healthy", "hang", "healed"}

// config is what the flags set.
type config struct {
	runs    int
	rate    int           // calls offered per second
	timeout time.Duration // the client's, per call
	lengths [phaseCount]time.Duration
	libs    []string
}

func main() {
	// go-zero logs to stdout, among the table's rows, when its breaker
	// drops calls.
	logx.Disable()
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "hang:", err)
		os.Exit(2)
	}
}

// run parses the flags and plays the black hole as many times as asked
// against each library asked for, printing a row of figures per library
// and run, and a line on stderr as each starts.
func run(args []string, stdout, stderr io.Writer) error {
	cfg := config{runs: 1, rate: 200, timeout: 5 * time.Second,
		lengths: [phaseCount]time.Duration{3 * time.Second, 6 * time.Second, 6 * time.Second}}
	fs := flag.NewFlagSet("hang", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.runs, "runs", cfg.runs, "how many times to run every library, one after another")
	fs.IntVar(&cfg.rate, "rate", cfg.rate, "calls offered per second (1 to 100,000)")
	fs.DurationVar(&cfg.timeout, "timeout", cfg.timeout, "the client's timeout on each call")
	for p, name := range phaseNames {
		fs.DurationVar(&cfg.lengths[p], name, cfg.lengths[p], "length of the "+name+" phase (0 leaves it out)")
	}
	libs := fs.String("libs", strings.Join(libraryNames(), ","), "the libraries to run, comma-separated, in this order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.libs = strings.Split(*libs, ",")
	if err := cfg.validate(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Each library at its defaults, on the wall clock: %d calls/s, each in its own goroutine; "+
		"client timeout %v; the dependency answers in %v, healthy %v, hangs %v, healed %v\n\n",
		cfg.rate, cfg.timeout, latency, cfg.lengths[healthy], cfg.lengths[hang], cfg.lengths[healed])
	fmt.Fprintln(stdout, "| library | run | 90 % dropped after (sustained) | reached the dependency while hung | peak in flight | "+
		"95 % admitted after healing (sustained) | dropped while healthy | driver's lag, at most | calls 10 ms late or more |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|")
	for r := 1; r <= cfg.runs; r++ {
		for i := range cfg.libs {
			name := cfg.libs[(r-1+i)%len(cfg.libs)]
			fmt.Fprintf(stderr, "run %d: %s\n", r, name)
			res := play(cfg, libraryNamed(name).new())
			fmt.Fprintf(stdout, "| %s | %d | %s |\n", name, r, strings.Join(res.cells(cfg.lengths), " | "))
		}
	}
	return nil
}

func (c config) validate() error {
	var total time.Duration
	for p, l := range c.lengths {
		if l < 0 {
			return fmt.Errorf("-%s %v: must not be negative", phaseNames[p], l)
		}
		total += l
	}
	switch {
	case c.runs < 1:
		return fmt.Errorf("-runs %d: at least 1", c.runs)
	case c.rate < 1 || c.rate > 100_000:
		return fmt.Errorf("-rate %d: must be between 1 and 100000 calls/s", c.rate)
	case c.timeout <= 0:
		return fmt.Errorf("-timeout %v: must be positive", c.timeout)
	case total == 0:
		return errors.New("every phase is 0s long: nothing to run")
	}
	for i, name := range c.libs {
		if libraryNamed(name) == nil {
			return fmt.Errorf("-libs: no library %q (know %s)", name, strings.Join(libraryNames(), ", "))
		}
		if slices.Contains(c.libs[:i], name) {
			return fmt.Errorf("-libs: %s twice", name)
		}
	}
	return nil
}

// counts are the calls of a stretch of time, by the time they were due.
type counts struct{ offered, allowed, dropped int }

func (c *counts) add(o counts) {
	c.offered += o.offered
	c.allowed += o.allowed
	c.dropped += o.dropped
}

// result is one library's run: the calls per phase and per 100 ms slot of
// each phase, the most calls in flight at once, how late a call was asked
// about at worst, and how many were asked about late.
type result struct {
	mu     sync.Mutex
	phases [phaseCount]counts   // guarded by mu
	slots  [phaseCount][]counts // guarded by mu
	lag    time.Duration        // guarded by mu
	late   int                  // guarded by mu

	inFlight, peak atomic.Int64
}

// record counts a call of phase p due at since after the phase began, asked
// about lag after that.
func (r *result) record(p int, since, lag time.Duration, c counts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases[p].add(c)
	r.slots[p][since/slot].add(c)
	r.lag = max(r.lag, lag)
	if lag >= late {
		r.late++
	}
}

// enter counts a call admitted, and the peak; leave counts it ended.
func (r *result) enter() {
	n := r.inFlight.Add(1)
	for {
		peak := r.peak.Load()
		if n <= peak || r.peak.CompareAndSwap(peak, n) {
			return
		}
	}
}

func (r *result) leave() { r.inFlight.Add(-1) }

// play runs the black hole once through allow, on the wall clock: call i
// of a phase is due i/rate seconds after the phase began, and is made in a
// goroutine of its own as soon as it is due. play returns when every call
// has ended, at most the client's timeout after the last phase.
func play(cfg config, allow allowFunc) *result {
	res := &result{}
	for p, l := range cfg.lengths {
		res.slots[p] = make([]counts, (l+slot-1)/slot)
	}
	var calls sync.WaitGroup
	start := time.Now()
	var begun time.Duration // when the current phase began, since the start
	for p, length := range cfg.lengths {
		n := int(int64(length) * int64(cfg.rate) / int64(time.Second))
		for i := 0; i < n; {
			now := time.Since(start)
			// Start every call due by now, then wait a little.
			for ; i < n; i++ {
				since := time.Duration(int64(i) * int64(time.Second) / int64(cfg.rate))
				if begun+since > now {
					break
				}
				due := begun + since
				calls.Add(1)
				go func() {
					defer calls.Done()
					ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
					defer cancel()
					lag := time.Since(start) - due
					done, ok := allow()
					if !ok {
						res.record(p, since, lag, counts{offered: 1, dropped: 1})
						return
					}
					res.record(p, since, lag, counts{offered: 1, allowed: 1})
					res.enter()
					done(dependency(ctx, p == hang))
					res.leave()
				}()
			}
			if i < n {
				time.Sleep(time.Millisecond)
			}
		}
		begun += length
	}
	calls.Wait()
	return res
}

// dependency answers a call made while it is healthy in [latency], and
// one made while it hangs never: the call ends when ctx does, with ctx's
// error.
func dependency(ctx context.Context, hung bool) error {
	if hung {
		<-ctx.Done()
		return ctx.Err()
	}
	t := time.NewTimer(latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sustainedFrom is figures.SustainedFrom over a phase's slots.
func sustainedFrom(slots []counts, ok func(c counts) bool) (time.Duration, bool) {
	return figures.SustainedFrom(slots, func(c counts) int { return c.offered }, ok)
}

// pct is figures.Pct.
func pct(part, whole int) float64 { return figures.Pct(part, whole) }

// cells writes the figures of a run with phases of the given lengths, "–"
// for those of a phase left out.
func (r *result) cells(lengths [phaseCount]time.Duration) []string {
	const dash = "–"
	cells := []string{dash, dash, fmt.Sprint(r.peak.Load()), dash, dash}
	timing := func(p int, ok func(c counts) bool) string {
		if d, found := sustainedFrom(r.slots[p], ok); found {
			return fmt.Sprintf("%.1f s", d.Seconds())
		}
		return fmt.Sprintf("not within %v", lengths[p])
	}
	if c := r.phases[hang]; c.offered > 0 {
		cells[0] = timing(hang, func(c counts) bool { return pct(c.dropped, c.offered) >= 90 })
		cells[1] = fmt.Sprintf("%.1f %%", pct(c.allowed, c.offered))
	}
	if r.phases[healed].offered > 0 {
		cells[3] = timing(healed, func(c counts) bool { return pct(c.allowed, c.offered) >= 95 })
	}
	if c := r.phases[healthy]; c.offered > 0 {
		cells[4] = fmt.Sprintf("%d (%.2f %%)", c.dropped, pct(c.dropped, c.offered))
	}
	offered := 0
	for _, c := range r.phases {
		offered += c.offered
	}
	return append(cells, fmt.Sprintf("%.1f ms", float64(r.lag)/float64(time.Millisecond)),
		fmt.Sprintf("%.2f %%", pct(r.late, offered)))
}
