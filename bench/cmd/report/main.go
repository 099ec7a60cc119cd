// Command report reads the output of the peer benchmarks (go test -bench,
// any number of runs appended to one file) and prints two tables from the
// medians of the runs: ns/op of every workload for every library with its
// ratio to srebreaker's, and, for each performance goal of srebreaker, the
// figure it is judged on and whether it is met.
//
// Usage:
//
//	go run ./cmd/report [-strict] [-libs srebreaker,...] results.txt
//
// With -strict it exits with status 1 when a goal is not met or cannot be
// judged for lack of data.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// base is the library the ratios are relative to.
const base = "srebreaker"

func main() {
	strict := flag.Bool("strict", false, "exit with status 1 when a goal is not met")
	libs := flag.String("libs", base+",failsafe-adaptive,failsafe-classic,gobreaker,go-zero,aegis",
		"comma-separated column order of the ratio table; "+base+" first")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: report [-strict] [-libs list] results.txt")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	res, err := parse(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	ratios(os.Stdout, res, strings.Split(*libs, ","))
	fmt.Println()
	if met := goalTable(os.Stdout, res); !met && *strict {
		os.Exit(1)
	}
}

// results holds every sample, and the order in which benchmarks first
// appeared.
type results struct {
	// samples maps benchmark name (without "Benchmark" and the GOMAXPROCS
	// suffix) → GOMAXPROCS (0 when the name had no suffix) → unit → values.
	samples map[string]map[int]map[string][]float64
	order   []run
}

// run is one benchmark at one GOMAXPROCS.
type run struct {
	name  string
	procs int
}

// parse reads the benchmark lines of r, in the format of go test -bench:
// "BenchmarkName-4  1000  12.5 ns/op  0 B/op ...". Other lines are skipped.
func parse(r io.Reader) (*results, error) {
	res := &results{samples: map[string]map[int]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			continue // "BenchmarkX ... FAIL" and the like
		}
		name, procs := splitProcs(strings.TrimPrefix(fields[0], "Benchmark"))
		for i := 2; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q: %w", line, fields[i], err)
			}
			res.add(name, procs, fields[i+1], v)
		}
	}
	return res, sc.Err()
}

// splitProcs splits the "-N" GOMAXPROCS suffix go test adds to a name when
// N is not 1.
func splitProcs(name string) (string, int) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name, 0
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 1 {
		return name, 0
	}
	return name[:i], n
}

func (r *results) add(name string, procs int, unit string, v float64) {
	if r.samples[name] == nil {
		r.samples[name] = map[int]map[string][]float64{}
	}
	if r.samples[name][procs] == nil {
		r.samples[name][procs] = map[string][]float64{}
		r.order = append(r.order, run{name, procs})
	}
	r.samples[name][procs][unit] = append(r.samples[name][procs][unit], v)
}

// median is the median of the samples of name at procs in unit, or NaN when
// there are none. procs < 0 takes whichever GOMAXPROCS the benchmark ran at
// (the serial benchmarks run at one only).
func (r *results) median(name string, procs int, unit string) float64 {
	byProcs := r.samples[name]
	if procs < 0 {
		keys := make([]int, 0, len(byProcs))
		for p := range byProcs {
			keys = append(keys, p)
		}
		if len(keys) == 0 {
			return math.NaN()
		}
		procs = slices.Min(keys)
	} else if procs == 1 {
		procs = 0 // go test writes no suffix for 1
	}
	vs := slices.Clone(byProcs[procs][unit])
	if len(vs) == 0 {
		return math.NaN()
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// goal is one line of the report: a figure and the most it may be.
type goal struct {
	what  string
	value float64
	unit  string // "x" for a ratio
	max   float64
}

func (g goal) met() (ok, known bool) {
	if math.IsNaN(g.value) {
		return false, false
	}
	return g.value <= g.max, true
}

const serial = -1 // any GOMAXPROCS: the serial benchmarks run at one

func ours(workload string) string { return workload + "/lib=" + base }

// goals computes the goal figures from r (the targets of issue 20). Each ratio divides two medians
// from the same results file.
func goals(r *results) []goal {
	allowAccept := r.median(ours("AllowAccept"), serial, "ns/op")
	par1 := r.median(ours("Parallel"), 1, "ns/op")
	reg1 := r.median(ours("RegistryGetParallel"), 1, "ns/op")
	buckets := []float64{
		r.median(ours("Buckets")+"/buckets=10", serial, "ns/op"),
		r.median(ours("Buckets")+"/buckets=20", serial, "ns/op"),
		r.median(ours("Buckets")+"/buckets=400", serial, "ns/op"),
	}
	return []goal{
		{"AllowAccept: ours / failsafe-adaptive",
			allowAccept / r.median("AllowAccept/lib=failsafe-adaptive", serial, "ns/op"), "x", 0.35},
		{"AllowAccept: ours / failsafe-classic",
			allowAccept / r.median("AllowAccept/lib=failsafe-classic", serial, "ns/op"), "x", 0.75},
		{"AllowAccept: ours allocs/op",
			r.median(ours("AllowAccept"), serial, "allocs/op"), "allocs", 0},
		{"Drop / AllowAccept (ours)",
			r.median(ours("Drop"), serial, "ns/op") / allowAccept, "x", 1},
		{"Drop: ours allocs/op",
			r.median(ours("Drop"), serial, "allocs/op"), "allocs", 0},
		{"Do / AllowAccept (ours)",
			r.median(ours("Do"), serial, "ns/op") / allowAccept, "x", 1.1},
		{"Criticality / AllowAccept (ours)",
			r.median(ours("Criticality"), serial, "ns/op") / allowAccept, "x", 1.25},
		{"Criticality: ours allocs/op",
			r.median(ours("Criticality"), serial, "allocs/op"), "allocs", 0},
		// ns/op of a parallel benchmark is wall time over all calls: at
		// -cpu 2, twice it is the CPU time per call. The target was 1.25;
		// it is 2 by decision (issue 29): a sync.Pool is the only
		// per-processor facility Go offers without the runtime's
		// internals (golang/go#18802), and handing a stripe out costs
		// what a Get and a Put cost.
		{"Parallel -cpu 2 / -cpu 1 (ours, CPU per call)",
			2 * r.median(ours("Parallel"), 2, "ns/op") / par1, "x", 2},
		{"Parallel -cpu 8 / -cpu 1 (ours, per op)",
			r.median(ours("Parallel"), 8, "ns/op") / par1, "x", 1},
		{"New: heap per breaker at the defaults (ours)",
			r.median(ours("New"), serial, "B/breaker"), "B", 1024},
		{"RegistryGet: existing name (ours)",
			r.median(ours("RegistryGet"), serial, "ns/op"), "ns", 15},
		{"RegistryGet: ours allocs/op",
			r.median(ours("RegistryGet"), serial, "allocs/op"), "allocs", 0},
		{"RegistryGetParallel -cpu 2 / -cpu 1 (ours, per op)",
			r.median(ours("RegistryGetParallel"), 2, "ns/op") / reg1, "x", 1},
		{"RegistryGetParallel -cpu 8 / -cpu 1 (ours, per op)",
			r.median(ours("RegistryGetParallel"), 8, "ns/op") / reg1, "x", 1},
		{"Buckets: slowest / fastest of 10, 20, 400 (ours)",
			slices.Max(buckets) / slices.Min(buckets), "x", 1.1},
	}
}

// goalTable writes the goal table to w and says whether every goal was met.
func goalTable(w io.Writer, r *results) bool {
	all := true
	fmt.Fprintf(w, "%-52s %10s %10s  %s\n", "goal (medians)", "measured", "target", "result")
	for _, g := range goals(r) {
		ok, known := g.met()
		verdict := "pass"
		switch {
		case !known:
			verdict = "n/a (no data)"
		case !ok:
			verdict = "FAIL"
		}
		all = all && ok
		fmt.Fprintf(w, "%-52s %10s %10s  %s\n", g.what, format(g.value, g.unit), "<= "+format(g.max, g.unit), verdict)
	}
	return all
}

func format(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case unit == "x":
		return strconv.FormatFloat(v, 'f', 2, 64) + "x"
	case unit == "allocs":
		return strconv.FormatFloat(v, 'f', -1, 64)
	case unit == "B":
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + unit
	default:
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
	}
}

// splitLib splits a benchmark name such as "Buckets/lib=srebreaker/buckets=10"
// into its library and the rest ("Buckets/buckets=10"). ok is false for a
// name without a lib= element.
func splitLib(name string) (rest, lib string, ok bool) {
	elems := strings.Split(name, "/")
	for i, e := range elems {
		if l, found := strings.CutPrefix(e, "lib="); found {
			return strings.Join(slices.Delete(elems, i, i+1), "/"), l, true
		}
	}
	return name, "", false
}

// ratios writes, for each workload in order of first appearance, the median
// ns/op of each library in libs and its ratio to that of libs[0].
func ratios(w io.Writer, r *results, libs []string) {
	type row struct {
		workload string
		procs    int
	}
	var rows []row
	seen := map[row]bool{}
	byLib := map[row]map[string]float64{}
	for _, run := range r.order {
		rest, lib, ok := splitLib(run.name)
		if !ok {
			continue
		}
		k := row{rest, run.procs}
		if !seen[k] {
			seen[k] = true
			rows = append(rows, k)
			byLib[k] = map[string]float64{}
		}
		byLib[k][lib] = r.median(run.name, run.procs, "ns/op")
	}

	fmt.Fprintf(w, "%-36s", "ns/op (median), ratio to "+libs[0])
	for _, lib := range libs {
		fmt.Fprintf(w, " %18s", lib)
	}
	fmt.Fprintln(w)
	for _, k := range rows {
		label := k.workload
		if k.procs > 0 {
			label += "-" + strconv.Itoa(k.procs)
		}
		fmt.Fprintf(w, "%-36s", label)
		ref, hasRef := byLib[k][libs[0]]
		for i, lib := range libs {
			v, ok := byLib[k][lib]
			switch {
			case !ok || math.IsNaN(v):
				fmt.Fprintf(w, " %18s", "-")
			case i == 0 || !hasRef:
				fmt.Fprintf(w, " %18s", strconv.FormatFloat(v, 'f', 1, 64))
			default:
				fmt.Fprintf(w, " %18s", fmt.Sprintf("%.1f %6.2fx", v, v/ref))
			}
		}
		fmt.Fprintln(w)
	}
}
