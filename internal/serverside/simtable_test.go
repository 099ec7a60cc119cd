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
