package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Bounds of a sweep: each run is a whole simulation.
const (
	maxSweepRates = 100
	maxSweepSeeds = 1000
	maxSweepRuns  = 10_000
)

// sweepRun is the figures of one run of a sweep.
type sweepRun struct {
	rate int // 0 for a scenario file, whose phases bring their rates
	seed uint64
	f    figures
	res  *result
}

// sweepRow is the worst of a rate's runs over the seeds: the most false
// drops, the largest share of the outage reaching the dependency, the
// slowest shed and readmission, the lowest goodput, the most attempts per
// success. NaN figures (a phase the scenario leaves out) stay NaN.
type sweepRow struct {
	rate int
	runs []sweepRun
	f    figures
}

// sweep runs the scenario of cfg at each rate (the built-in scenario's
// -rate; none for a scenario file) for each seed, and returns a row per
// rate in the order given.
func sweep(cfg config, rates []int, seeds []uint64) ([]sweepRow, error) {
	if len(rates) == 0 {
		rates = []int{cfg.rate}
		if cfg.scenarioFile != "" {
			rates = []int{0}
		}
	}
	if len(seeds) == 0 {
		seeds = []uint64{cfg.seed}
	}
	if runs := len(rates) * len(seeds); runs > maxSweepRuns {
		return nil, fmt.Errorf("%d rates × %d seeds make %d runs: at most %d", len(rates), len(seeds), runs, maxSweepRuns)
	}
	var rows []sweepRow
	for _, rate := range rates {
		row := sweepRow{rate: rate}
		for _, seed := range seeds {
			c := cfg
			if rate > 0 {
				c.rate = rate
			}
			c.seed = seed
			res, err := simulate(c)
			if err != nil {
				if rate > 0 {
					return nil, fmt.Errorf("rate %d: %w", rate, err)
				}
				return nil, err
			}
			row.runs = append(row.runs, sweepRun{rate: rate, seed: seed, f: res.figures(), res: res})
		}
		row.f = worst(row.runs)
		rows = append(rows, row)
	}
	return rows, nil
}

// worst combines the runs' figures, each at its worst.
func worst(runs []sweepRun) figures {
	f := runs[0].f
	for _, r := range runs[1:] {
		f.falseDrops = math.Max(f.falseDrops, r.f.falseDrops)
		f.outageReached = math.Max(f.outageReached, r.f.outageReached)
		f.shedAfter = math.Max(f.shedAfter, r.f.shedAfter)
		f.admittedAfter = math.Max(f.admittedAfter, r.f.admittedAfter)
		f.goodput = math.Min(f.goodput, r.f.goodput)
		f.attemptsPerSuccess = math.Max(f.attemptsPerSuccess, r.f.attemptsPerSuccess)
	}
	return f
}

// runSweep prints the sweep's table: unless quiet, a row per rate and
// seed; then a row per rate, the worst over the seeds.
func runSweep(cfg config, rates []int, seeds []uint64, out io.Writer) error {
	rows, err := sweep(cfg, rates, seeds)
	if err != nil {
		return err
	}
	what := "the built-in scenario (" + builtInLine(cfg) + ")"
	switch {
	case cfg.scenarioFile != "":
		what = "scenario " + cfg.scenarioFile
	case cfg.named != "":
		what = "scenario " + cfg.named + " (" + namedScenarios[cfg.named].about + ")"
	}
	runs := rows[0].runs
	fmt.Fprintf(out, "breaker: %s; %s; seeds %s\n\n", breakerLine(cfg.breakerConfig), what,
		formatSeeds(runs))
	header := func(first string) {
		fmt.Fprintf(out, "| %s | outage reaching the dependency | 90 %% shed after (sustained) | 95 %% admitted after healing (sustained) | false drops while healthy | overload goodput, %% of capacity | attempts per success |\n", first)
		fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	}
	lengths := cfgLengths(rows[0].runs[0].res)
	if !cfg.quiet && len(runs) > 1 {
		header("requests/s, seed")
		for _, row := range rows {
			for _, r := range row.runs {
				fmt.Fprintf(out, "| %s, seed %d | %s |\n", rateCell(row.rate), r.seed, figureCells(r.f, lengths))
			}
		}
		fmt.Fprintln(out)
	}
	first := "requests/s"
	if len(runs) > 1 {
		first = "requests/s, worst seed"
	}
	header(first)
	for _, row := range rows {
		fmt.Fprintf(out, "| %s | %s |\n", rateCell(row.rate), figureCells(row.f, lengths))
	}
	return nil
}

// builtInLine describes the built-in scenario's phases.
func builtInLine(cfg config) string {
	p := cfg.phases
	says := ""
	if cfg.saysOverloaded {
		says = ", the excess rejected as overloaded"
	}
	return fmt.Sprintf("healthy %v, outage %v, healed %v, overload %v at %g %% capacity%s; %g %% errors outside the outage",
		p[healthy].length, p[outage].length, p[healed].length, p[overload].length, 100*cfg.capacity, says, 100*cfg.errorRate)
}

// phaseLengths are the lengths of the outage and healed phases, for the
// "not within" of the timings.
type phaseLengths struct{ outage, healed string }

func cfgLengths(res *result) phaseLengths {
	var l phaseLengths
	if p := res.phaseOf(roleOutage); p >= 0 {
		l.outage = res.scenario.phases[p].length.String()
	}
	if p := res.phaseOf(roleHealed); p >= 0 {
		l.healed = res.scenario.phases[p].length.String()
	}
	return l
}

func rateCell(rate int) string {
	if rate == 0 {
		return "file"
	}
	return strconv.Itoa(rate)
}

// figureCells writes the figures of a sweep row, "–" for a figure whose
// phase the scenario leaves out.
func figureCells(f figures, l phaseLengths) string {
	const dash = "–"
	timing := func(seconds float64, within string) string {
		switch {
		case math.IsNaN(seconds):
			return dash
		case math.IsInf(seconds, 1):
			return "not within " + within
		}
		return fmt.Sprintf("%.1f s", seconds)
	}
	number := func(v float64, format string) string {
		if math.IsNaN(v) {
			return dash
		}
		return fmt.Sprintf(format, v)
	}
	attempts := number(f.attemptsPerSuccess, "%.2f")
	if math.IsInf(f.attemptsPerSuccess, 1) {
		attempts = "no success"
	}
	return strings.Join([]string{
		number(f.outageReached, "%.1f %%"),
		timing(f.shedAfter, l.outage),
		timing(f.admittedAfter, l.healed),
		number(f.falseDrops, "%.0f"),
		number(f.goodput, "%.1f %%"),
		attempts,
	}, " | ")
}

// formatSeeds lists the seeds of the runs, runs of consecutive seeds as
// first–last.
func formatSeeds(runs []sweepRun) string {
	var parts []string
	for i := 0; i < len(runs); {
		j := i
		for j+1 < len(runs) && runs[j+1].seed == runs[j].seed+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", runs[i].seed, runs[j].seed))
		} else {
			parts = append(parts, strconv.FormatUint(runs[i].seed, 10))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// parseRates parses -rates: a comma-separated list of requests per second,
// each from 1 to maxRate.
func parseRates(s string) ([]int, error) {
	var rates []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		r, err := strconv.Atoi(part)
		if err != nil || r < 1 || r > maxRate {
			return nil, fmt.Errorf("-rates %s: %q is not a whole number of requests/s from 1 to %d", s, part, maxRate)
		}
		rates = append(rates, r)
	}
	if len(rates) > maxSweepRates {
		return nil, fmt.Errorf("-rates %s: %d rates, at most %d", s, len(rates), maxSweepRates)
	}
	return rates, nil
}

// parseSeeds parses -seeds: a comma-separated list of seeds and ranges of
// seeds, first-last inclusive, such as 1-5 or 1,7,10-12.
func parseSeeds(s string) ([]uint64, error) {
	var seeds []uint64
	bad := func(part, why string) ([]uint64, error) {
		return nil, fmt.Errorf("-seeds %s: %q %s", s, part, why)
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		first, last, isRange := strings.Cut(part, "-")
		from, err := strconv.ParseUint(first, 10, 64)
		if err != nil {
			return bad(part, "is not a seed (a whole number) or a range of seeds such as 1-5")
		}
		to := from
		if isRange {
			if to, err = strconv.ParseUint(last, 10, 64); err != nil {
				return bad(part, "is not a seed (a whole number) or a range of seeds such as 1-5")
			}
			if to < from {
				return bad(part, "runs backwards: write the smaller seed first")
			}
		}
		if to-from >= maxSweepSeeds || len(seeds)+int(to-from+1) > maxSweepSeeds {
			return nil, fmt.Errorf("-seeds %s: more than %d seeds", s, maxSweepSeeds)
		}
		for seed := from; ; seed++ {
			seeds = append(seeds, seed)
			if seed == to {
				break
			}
		}
	}
	return seeds, nil
}
