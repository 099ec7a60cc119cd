package serverside

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/srebreaker/srebreaker/criticality"
)

var (
	simTable = flag.Bool("sim.table", false, "print the simulated server's table (TestSimulated_table)")
	simNone  = flag.Bool("sim.none", false, "with -sim.table, run the handlers with no limit")
	simSeeds = flag.Int("sim.seeds", 8, "with -sim.table, seeds per row (2 for 32 × 5 ms)")
	simTrc   = flag.String("sim.trace", "", "print the limit's figures every 100 ms of a simulated row (TestSimulated_trace): WxS,multiple,seed[,heavy][,bursts][,timeout=D][,contention=F][,jitter=F], such as 2x200ms,2,5")
)

// TestSimulated_table prints, with -sim.table, what the limit serves of
// the simulated server's handlers at each offered rate, over seeds: each
// row runs 2 s at its rate, then is measured for 10 s, as
// bench/cmd/overload's steady rows are. The figures in limit.go's
// comments come from it:
//
//	go test ./internal/serverside -run TestSimulated_table -sim.table [-sim.none]
func TestSimulated_table(t *testing.T) {
	if !*simTable {
		t.Skip("-sim.table prints the table")
	}
	shapes := []simServer{
		{w: 4, s: 20 * time.Millisecond},
		{w: 32, s: 5 * time.Millisecond},
		{w: 2, s: 200 * time.Millisecond},
		{w: 4, s: 20 * time.Millisecond, heavy: true},
	}
	var b strings.Builder
	fmt.Fprintln(&b, "| handlers | offered | served, share of capacity, by seed | p99 at most | CRITICAL_PLUS at least | rejected | timed out | served for callers gone |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|")
	for _, sv := range shapes {
		sv.none = *simNone
		seeds := uint64(*simSeeds)
		if sv.w == 32 {
			seeds = min(seeds, 2)
		}
		name := sv.capacityName()
		for _, row := range []struct {
			multiple float64
			bursts   bool
		}{{0.5, false}, {0.9, false}, {0.9, true}, {1.2, false}, {1.5, false}, {2, false}, {4, false}} {
			var shares []string
			var p99 time.Duration
			cp := 1.0
			rejected, timedOut, gone := 0, 0, 0
			for seed := uint64(1); seed <= seeds; seed++ {
				r := simSteady(sv, row.multiple, 10*time.Second, seed, row.bursts)
				shares = append(shares, fmt.Sprintf("%.0f", 100*r.share()))
				p99 = max(p99, r.p99())
				cp = min(cp, r.levelShare(criticality.CriticalPlus))
				rejected += r.rejected
				timedOut += r.timedOut
				gone += r.gone
			}
			offered := fmt.Sprintf("%v×", row.multiple)
			if row.bursts {
				offered += ", bursts of 3×"
			}
			fmt.Fprintf(&b, "| %s | %s | %s %% | %v | %.1f %% | %d | %d | %d |\n", name, offered,
				strings.Join(shares, ", "), p99.Round(time.Millisecond), 100*cp, rejected, timedOut, gone)
		}
	}
	t.Log("\n" + b.String())
}

// capacityName names sv as the tables do: W × S, and heavy-tailed.
func (sv simServer) capacityName() string {
	name := fmt.Sprintf("%d × %v", sv.w, sv.s)
	if sv.heavy {
		name += ", heavy-tailed"
	}
	return name
}

// TestSimulated_trace prints, with -sim.trace, the limit's figures every
// 100 ms of one simulated steady row (2 s of warm-up, then 10 s): the
// limit, the calls it lets in now, in the handlers and queued, whether
// it is overloaded, starting or probing, capacity, noLoad (and the spread
// it was told to), the calls the handlers serve at once, the last
// interval's latency, and the rejections by level. The analyses in
// docs/design/benchmarks.md ("A simulated server") were read from it:
//
//	go test ./internal/serverside -run TestSimulated_trace -v -sim.trace 2x200ms,2,5
func TestSimulated_trace(t *testing.T) {
	if *simTrc == "" {
		t.Skip("-sim.trace WxS,multiple,seed[,heavy][,bursts][,timeout=D][,contention=F][,jitter=F] prints a row's trace")
	}
	parts := strings.Split(*simTrc, ",")
	if len(parts) < 3 {
		t.Fatalf("-sim.trace %q: want WxS,multiple,seed[,heavy][,bursts][,timeout=D][,contention=F][,jitter=F]", *simTrc)
	}
	var sv simServer
	var multiple float64
	var seed uint64
	w, s, ok := strings.Cut(parts[0], "x")
	d, err := time.ParseDuration(s)
	_, err2 := fmt.Sscan(w, &sv.w)
	_, err3 := fmt.Sscan(parts[1], &multiple)
	_, err4 := fmt.Sscan(parts[2], &seed)
	if !ok || err != nil || err2 != nil || err3 != nil || err4 != nil || sv.w < 1 || d <= 0 {
		t.Fatalf("-sim.trace %q: want WxS,multiple,seed[,heavy][,bursts][,timeout=D][,contention=F][,jitter=F]", *simTrc)
	}
	sv.s = d
	bursts := false
	for _, p := range parts[3:] {
		switch p {
		case "heavy":
			sv.heavy = true
		case "bursts":
			bursts = true
		default:
			// timeout=D: the callers' timeout (1 s when not given);
			// contention=F and jitter=F: a shared CPU's (see simServer).
			name, v, _ := strings.Cut(p, "=")
			var err error
			var f float64
			switch name {
			case "timeout":
				sv.timeout, err = time.ParseDuration(v)
				if sv.timeout <= 0 {
					err = fmt.Errorf("not a positive duration")
				}
			case "contention", "jitter":
				_, err = fmt.Sscan(v, &f)
				if f < 0 || f > 1 {
					err = fmt.Errorf("not within [0, 1]")
				}
				if name == "contention" {
					sv.contention = f
				} else {
					sv.jitter = f
				}
			default:
				err = fmt.Errorf("unknown")
			}
			if err != nil {
				t.Fatalf("-sim.trace: %q: %v: want heavy, bursts, timeout=D, contention=F or jitter=F", p, err)
			}
		}
	}
	var b strings.Builder
	next := time.Duration(0)
	simTrace = func(since time.Duration, l *Limiter) {
		if since < next {
			return
		}
		next = since.Truncate(100*time.Millisecond) + 100*time.Millisecond
		fmt.Fprintf(&b, "%5.1fs limit %5.1f allowed %3d in %3d queued %3d overload %-5v start %-5v probe %-5v capacity %7.1f noLoad %v (%.2f) atOnce %.1f latency %v tail %.2f perCall %.2f rejected %v\n",
			since.Seconds(), l.limit, l.allowed(), l.inFlight.Load(), l.queued, l.overload, l.starting, l.probing, l.capacity,
			l.noLoad().Round(time.Millisecond/10), l.noLoadSpread(), l.atOnce(), l.latency.Round(time.Millisecond/10),
			l.tail, l.perCall, l.rejected)
	}
	defer func() { simTrace = nil }()
	r := simSteady(sv, multiple, 10*time.Second, seed, bursts)
	t.Log("\n" + b.String() + "measured: " + r.String())
}
