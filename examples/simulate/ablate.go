package main

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"math"
	"path"
	"strings"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// ablationRule is a rule of the judge that -ablate turns off, to measure
// what it does: each rule was added for a case it fixed, and one that
// changes nothing of any scenario can go.
type ablationRule struct {
	name  string
	about string
	off   func(bc *breakerConfig)
}

// without returns the ablationRule that turns rule r of the judge off.
func without(name, about string, r evidence.Rules) ablationRule {
	return ablationRule{name, about, func(bc *breakerConfig) { bc.without |= r }}
}

// ablationRules are the rules -ablate names, in the order the judge reads
// them (docs/design/algorithm.md, "Each rule measured out").
var ablationRules = []ablationRule{
	{"aggression", "the exponent on the drop probability (aggression 1)",
		func(bc *breakerConfig) { bc.aggression = 1 }},
	{"counted-drops", "drops counted as requests, up to K−1 per admitted call",
		func(bc *breakerConfig) { bc.countDrops = false }},
	without("read-back", "on light traffic, counts read back past the window", evidence.RuleReadBack),
	without("down", "a run of failures sets older successes aside", evidence.RuleDown),
	without("unlikely", "the run of failures unlikely from the other calls' rate", evidence.RuleUnlikely),
	without("down-floor", "down judged on up to evidence/2 failures read back", evidence.RuleDownFloor),
	without("unprotected", "no protection once a down run spans a window or twice protection's calls", evidence.RuleUnprotected),
	without("up", "a run of successes drops nothing", evidence.RuleUp),
	without("recovery", "after a window down, the recovery judged on its own calls", evidence.RuleRecovery),
	without("shift", "the newest buckets judged alone when they fail 3σ more", evidence.RuleShift),
	without("fleet-own", "a process with evidence judges the fleet's window on its own", evidence.RuleFleetOwn),
	without("fleet-own-up", "a process whose own run is up is not shed by the fleet's newest buckets", evidence.RuleFleetOwnUp),
	without("fleet-probe", "a fleet down for a window probes with each process's share", evidence.RuleFleetProbe),
	without("pace", "while shedding, a call admitted at least every half window, evenly", evidence.RulePace),
}

// parseAblate parses -ablate: a comma-separated list of rule names.
func parseAblate(s string) ([]ablationRule, error) {
	var rules []ablationRule
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		found := false
		for _, r := range ablationRules {
			if r.name == part {
				rules, found = append(rules, r), true
				break
			}
		}
		if !found {
			names := make([]string, len(ablationRules))
			for i, r := range ablationRules {
				names[i] = r.name
			}
			return nil, fmt.Errorf("-ablate %s: no rule %q; the rules are %s", s, part, strings.Join(names, ", "))
		}
	}
	return rules, nil
}

// ablationScenarios are the scenarios -ablation runs, each as the flags
// that select it, seeds aside.
var ablationScenarios = []string{
	"-rates 2000",
	"-scenario examples/simulate/testdata/standard-no-errors-after-outage.json",
	"-rates 2,5,20,200,2000 -healthy 10s -outage 20s -healed 20s -overload 20s",
	"-clients 50 -rates 2 -healthy 10s -outage 20s -healed 20s -overload 20s",
	"-clients 10 -rates 5 -healthy 10s -outage 20s -healed 20s -overload 20s",
	"-clients 10 -rates 20 -healthy 10s -outage 20s -healed 20s -overload 20s",
	"-scenario examples/simulate/testdata/slow-brownout.json",
	"-rates 2000 -mix 20,40,20,20",
	"-scenario blackhole",
	"-scenario slowdown",
	// The cases rules were added for that the scenarios above leave out:
	// a dependency failing a fifth of its calls (unlikely), an outage
	// shorter than the window (up), a fleet of which a part is cut off
	// (fleet-own-up).
	"-scenario examples/simulate/testdata/failing-20.json",
	"-scenario examples/simulate/testdata/failing-20-at-5.json",
	"-rates 200 -outage 1500ms",
	"-clients 50 -rates 20 -cutoff 20 -healthy 10s -outage 20s -healed 20s -overload 20s",
}

// testdata holds the scenario files -ablation runs, so that it runs from
// any directory.
//
//go:embed testdata/standard-no-errors-after-outage.json testdata/slow-brownout.json
//go:embed testdata/failing-20.json testdata/failing-20-at-5.json
var testdata embed.FS

// ablationConfig returns the configuration args select, a scenario file
// read from testdata.
func ablationConfig(args string) (config, error) {
	cfg, err := parseFlags(strings.Fields(args), io.Discard)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", args, err)
	}
	if cfg.scenarioFile != "" {
		data, err := testdata.ReadFile("testdata/" + path.Base(cfg.scenarioFile))
		if err != nil {
			return cfg, err
		}
		sc, err := parseScenario(bytes.NewReader(data))
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", cfg.scenarioFile, err)
		}
		sc.source = cfg.scenarioFile
		cfg.fixed = &sc
	}
	return cfg, nil
}

// span is the range of a figure over the seeds.
type span struct{ lo, hi float64 }

// spanOf returns the range of the figure f picks over runs of cfg.
func spanOf(cfg config, runs []sweepRun, f func(config, sweepRun) float64) span {
	s := span{math.NaN(), math.NaN()}
	for _, r := range runs {
		v := f(cfg, r)
		if math.IsNaN(v) {
			continue
		}
		if math.IsNaN(s.lo) || v < s.lo {
			s.lo = v
		}
		if math.IsNaN(s.hi) || v > s.hi {
			s.hi = v
		}
	}
	return s
}

// ablationFigure is a figure of the table, with the precision it is
// printed and compared at.
type ablationFigure struct {
	name   string
	of     func(cfg config, r sweepRun) float64
	digits int
	unit   string
}

var ablationFigures = []ablationFigure{
	{"outage reaching the dependency", func(_ config, r sweepRun) float64 { return r.f.outageReached }, 1, " %"},
	{"90 % shed after (sustained)", func(_ config, r sweepRun) float64 { return r.f.shedAfter }, 1, " s"},
	{"95 % readmitted after (sustained)", func(_ config, r sweepRun) float64 { return r.f.admittedAfter }, 1, " s"},
	{"false drops", func(_ config, r sweepRun) float64 { return r.f.falseDrops }, 0, ""},
	{"goodput, % of capacity", func(_ config, r sweepRun) float64 { return r.f.goodput }, 1, " %"},
	{"attempts per success", func(_ config, r sweepRun) float64 { return r.f.attemptsPerSuccess }, 2, ""},
	{"with -cutoff, the others' outage calls dropped", healthyDrops, 2, " %"},
}

// healthyDrops is, with -cutoff, the share of the outage's calls that the
// clients not cut off dropped; NaN without.
func healthyDrops(cfg config, r sweepRun) float64 {
	p := r.res.phaseOf(roleOutage)
	if cfg.cutoff == 0 || r.res.fleet == nil || p < 0 {
		return math.NaN()
	}
	h := r.res.fleet.group(p, cfg.cutoff, cfg.clients)
	return pct(h.dropped, h.offered)
}

// rounded is v at d decimal digits: the figures are compared as they are
// printed, so that a difference the table cannot show moves nothing.
func rounded(v float64, d int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// apart reports whether a and b, rounded to d digits, do not overlap.
func (a span) apart(b span, d int) bool {
	if math.IsNaN(a.lo) || math.IsNaN(b.lo) {
		return math.IsNaN(a.lo) != math.IsNaN(b.lo)
	}
	return rounded(a.hi, d) < rounded(b.lo, d) || rounded(b.hi, d) < rounded(a.lo, d)
}

// cell prints s at d digits, one value when the seeds agree.
func (s span) cell(d int, unit string) string {
	one := func(v float64) string {
		if math.IsInf(v, 1) {
			return "never"
		}
		return fmt.Sprintf("%.*f", d, v)
	}
	withUnit := func(v string) string {
		if v == "never" {
			return v
		}
		return v + unit
	}
	switch {
	case math.IsNaN(s.lo):
		return "–"
	case one(s.lo) == one(s.hi):
		return withUnit(one(s.lo))
	case math.IsInf(s.hi, 1):
		return withUnit(one(s.lo)) + "–never"
	}
	return one(s.lo) + "–" + withUnit(one(s.hi))
}

// ablationRow is one scenario at one rate with one rule off (none for
// the breaker as it is): each figure's range over the seeds.
type ablationRow struct {
	scenario string
	rule     string // "" for none
	spans    []span
	moved    []bool // the figure's range is apart from the breaker's
}

// ablationTable is what -ablation measured.
type ablationTable struct {
	seeds []uint64
	rows  []ablationRow
	// moved is, per rule, the scenarios and figures it moved.
	moved map[string][]string
}

// ablation runs each of scenarios with each of rules off in turn, and
// with none, for each seed.
func ablation(scenarios []string, rules []ablationRule, seeds []uint64) (*ablationTable, error) {
	t := &ablationTable{seeds: seeds, moved: map[string][]string{}}
	for _, args := range scenarios {
		cfg, err := ablationConfig(args)
		if err != nil {
			return nil, err
		}
		base, err := ablationRows(cfg, args, "", seeds)
		if err != nil {
			return nil, err
		}
		t.rows = append(t.rows, base...)
		for _, r := range rules {
			c := cfg
			r.off(&c.breakerConfig)
			rows, err := ablationRows(c, args, r.name, seeds)
			if err != nil {
				return nil, err
			}
			for i := range rows {
				for j, f := range ablationFigures {
					if rows[i].spans[j].apart(base[i].spans[j], f.digits) {
						rows[i].moved[j] = true
						t.moved[r.name] = append(t.moved[r.name], rows[i].scenario+": "+f.name)
					}
				}
			}
			t.rows = append(t.rows, rows...)
		}
	}
	return t, nil
}

// ablationRows sweeps cfg over its rates and seeds: a row per rate.
func ablationRows(cfg config, args, rule string, seeds []uint64) ([]ablationRow, error) {
	sweepRows, err := sweep(cfg, cfg.rates, seeds)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", args, err)
	}
	var rows []ablationRow
	for _, sr := range sweepRows {
		name := args
		if len(cfg.rates) > 1 {
			name = strings.Replace(args, "-rates "+joinRates(cfg.rates), fmt.Sprintf("-rates %d", sr.rate), 1)
		}
		row := ablationRow{scenario: name, rule: rule, moved: make([]bool, len(ablationFigures))}
		for _, f := range ablationFigures {
			row.spans = append(row.spans, spanOf(cfg, sr.runs, f.of))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func joinRates(rates []int) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = fmt.Sprint(r)
	}
	return strings.Join(parts, ",")
}

// print writes the table, a figure that moved beyond the seeds' spread in
// bold, then a line per rule: what it moved, or that it moved nothing.
func (t *ablationTable) print(out io.Writer, rules []ablationRule) {
	fmt.Fprintf(out, "Each figure is its range over seeds %s; in bold, a range apart from the breaker's (no rule off).\n\n",
		formatSeeds(seedRuns(t.seeds)))
	fmt.Fprint(out, "| scenario | rule off |")
	for _, f := range ablationFigures {
		fmt.Fprintf(out, " %s |", f.name)
	}
	fmt.Fprint(out, "\n|---|---|")
	for range ablationFigures {
		fmt.Fprint(out, "---|")
	}
	fmt.Fprintln(out)
	for _, r := range t.rows {
		rule := r.rule
		if rule == "" {
			rule = "none"
		}
		fmt.Fprintf(out, "| `%s` | %s |", r.scenario, rule)
		for j, f := range ablationFigures {
			c := r.spans[j].cell(f.digits, f.unit)
			if r.moved[j] {
				c = "**" + c + "**"
			}
			fmt.Fprintf(out, " %s |", c)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| rule off | what it does | figures moved beyond the seeds' spread |")
	fmt.Fprintln(out, "|---|---|---|")
	for _, r := range rules {
		moved := t.moved[r.name]
		what := "none"
		if len(moved) > 0 {
			what = fmt.Sprintf("%d: %s", len(moved), strings.Join(moved, "; "))
		}
		fmt.Fprintf(out, "| %s | %s | %s |\n", r.name, r.about, what)
	}
}

// seedRuns wraps seeds as runs, for formatSeeds.
func seedRuns(seeds []uint64) []sweepRun {
	runs := make([]sweepRun, len(seeds))
	for i, s := range seeds {
		runs[i].seed = s
	}
	return runs
}

// runAblation runs -ablation: every scenario of ablationScenarios, with
// each rule off in turn and with none, over seeds (1 to 5 unless given);
// with rules (-ablate), with those off together and with none.
func runAblation(rules []ablationRule, seeds []uint64, out io.Writer) error {
	if len(seeds) == 0 {
		seeds = []uint64{1, 2, 3, 4, 5}
	}
	measured := ablationRules
	if len(rules) > 0 {
		measured = []ablationRule{together(rules)}
	}
	t, err := ablation(ablationScenarios, measured, seeds)
	if err != nil {
		return err
	}
	t.print(out, measured)
	return nil
}

// together is the rules as one, all off at once.
func together(rules []ablationRule) ablationRule {
	names, abouts := make([]string, len(rules)), make([]string, len(rules))
	for i, r := range rules {
		names[i], abouts[i] = r.name, r.about
	}
	return ablationRule{strings.Join(names, ","), strings.Join(abouts, "; "), func(bc *breakerConfig) {
		for _, r := range rules {
			r.off(bc)
		}
	}}
}

// ablatedLine names the rules of the judge bc turns off, for the report's
// first line; "" for none.
func ablatedLine(bc breakerConfig) string {
	var names []string
	for _, r := range ablationRules {
		c := defaultConfig().breakerConfig
		r.off(&c)
		if c.without != 0 && bc.without&c.without == c.without {
			names = append(names, r.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " without " + strings.Join(names, ",")
}
