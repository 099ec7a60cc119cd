package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkAllowAccept/lib=srebreaker-2         	  850688	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAllowAccept/lib=srebreaker-2         	  850688	       120.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAllowAccept/lib=srebreaker-2         	  850688	       500.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAllowAccept/lib=failsafe-adaptive-2  	 1254139	       300.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAllowAccept/lib=failsafe-classic-2   	 2943318	        60.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkDrop/lib=srebreaker-2                	 1520523	        75.0 ns/op	         0.002 admitted/op	       0 B/op	       0 allocs/op
BenchmarkParallel/lib=srebreaker           	  872960	       130.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkParallel/lib=srebreaker-2         	  630398	       200.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkParallel/lib=go-zero-8            	  203883	       492.8 ns/op	      24 B/op	       1 allocs/op
BenchmarkNew/lib=srebreaker-2                 	  139849	       762.6 ns/op	      1128 B/breaker	    1240 B/op	       8 allocs/op
--- FAIL: BenchmarkDo/lib=srebreaker
PASS
`

func TestParse_medianAndProcs(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		procs int
		unit  string
		want  float64
	}{
		{"AllowAccept/lib=srebreaker", serial, "ns/op", 120},
		{"AllowAccept/lib=failsafe-adaptive", serial, "ns/op", 300},
		{"Drop/lib=srebreaker", serial, "admitted/op", 0.002},
		{"Parallel/lib=srebreaker", 1, "ns/op", 130},
		{"Parallel/lib=srebreaker", 2, "ns/op", 200},
		{"Parallel/lib=go-zero", 8, "allocs/op", 1},
		{"New/lib=srebreaker", serial, "B/breaker", 1128},
	}
	for _, tc := range tests {
		if got := r.median(tc.name, tc.procs, tc.unit); got != tc.want {
			t.Errorf("median(%s, %d, %s) = %v, want %v", tc.name, tc.procs, tc.unit, got, tc.want)
		}
	}
	if got := r.median("Do/lib=srebreaker", serial, "ns/op"); !math.IsNaN(got) {
		t.Errorf("median of a failed benchmark = %v, want NaN", got)
	}
}

func TestReport_verdicts(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if goalTable(&out, r) {
		t.Error("report says every goal was met, but some have no data")
	}
	want := map[string]string{
		"AllowAccept: ours / failsafe-adaptive": "0.40x",
		"AllowAccept: ours / failsafe-classic":  "2.00x",
		"Drop / AllowAccept (ours)":             "pass",
		"Parallel -cpu 2 / -cpu 1":              "3.08x",
		"Criticality / AllowAccept":             "n/a",
		"New: heap per breaker":                 "1128 B",
		"Do / AllowAccept (ours)":               "n/a",
	}
	for prefix, fragment := range want {
		found := false
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, prefix) {
				found = true
				if !strings.Contains(line, fragment) {
					t.Errorf("line %q lacks %q", line, fragment)
				}
			}
		}
		if !found {
			t.Errorf("no line for %q in\n%s", prefix, out.String())
		}
	}
}

func TestRatios_relativeToFirstLib(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ratios(&out, r, []string{"srebreaker", "failsafe-adaptive", "go-zero"})
	lines := strings.Split(out.String(), "\n")
	want := map[string][]string{
		"AllowAccept-2 ": {"120.0", "300.0   2.50x", "-"},
		"Parallel-8 ":    {"-", "-", "492.8"},
		"Parallel ":      {"130.0", "-", "-"},
	}
	for prefix, cells := range want {
		found := false
		for _, line := range lines {
			if !strings.HasPrefix(line, prefix) {
				continue
			}
			found = true
			for _, c := range cells {
				if !strings.Contains(line, c) {
					t.Errorf("line %q lacks %q", line, c)
				}
			}
		}
		if !found {
			t.Errorf("no line for %q in\n%s", prefix, out.String())
		}
	}
}

func TestSplitLib(t *testing.T) {
	tests := []struct{ name, rest, lib string }{
		{"AllowAccept/lib=go-zero", "AllowAccept", "go-zero"},
		{"Buckets/lib=srebreaker/buckets=10", "Buckets/buckets=10", "srebreaker"},
	}
	for _, tc := range tests {
		rest, lib, ok := splitLib(tc.name)
		if !ok || rest != tc.rest || lib != tc.lib {
			t.Errorf("splitLib(%q) = %q, %q, %v; want %q, %q, true", tc.name, rest, lib, ok, tc.rest, tc.lib)
		}
	}
	if _, _, ok := splitLib("Other"); ok {
		t.Error(`splitLib("Other") found a library`)
	}
}
