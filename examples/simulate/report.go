package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

func pct(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// breakerLine describes the breaker under test.
func breakerLine(bc breakerConfig) string {
	slowCall := ""
	if bc.slowCall != 0 {
		slowCall = fmt.Sprintf(" slow call=%v", bc.slowCall)
	}
	if bc.plain {
		return fmt.Sprintf("K=%v protection=%d window=%v buckets=%d, plain formula", bc.k, bc.protection, bc.window, bc.buckets) + slowCall
	}
	evidence := fmt.Sprintf(" evidence=%d", bc.evidence)
	if bc.horizon != 0 && bc.evidence > 0 {
		evidence += fmt.Sprintf(" within %v", bc.horizon)
	}
	return fmt.Sprintf("K=%v protection=%d window=%v buckets=%d aggression=%v drops counted=%v trust recent=%v",
		bc.k, bc.protection, bc.window, bc.buckets, bc.aggression, bc.countDrops, bc.trust) + evidence + slowCall +
		ablatedLine(bc)
}

// trafficLine describes what a simulation offered.
func trafficLine(cfg config, sc scenario) string {
	line := fmt.Sprintf("scenario %s: %d phases over %v", sc.source, len(sc.phases), sc.length())
	switch {
	case sc.source == "":
		line = fmt.Sprintf("%d requests/s offered", cfg.rate)
		if sc.saysOverloaded() {
			line += ", the overload's excess rejected as overloaded"
		}
	case cfg.named != "":
		line += fmt.Sprintf(", %d requests/s", cfg.rate)
	}
	if sc.timeout > 0 {
		line += fmt.Sprintf(", timeout %v", sc.timeout)
	}
	if sc.mix.set() {
		line += fmt.Sprintf(", criticality mix %s", sc.mix)
	}
	return line
}

// printSimulation prints the per-second table (unless quiet), the summary
// per phase, the figures by role and the comparison row.
func printSimulation(out io.Writer, cfg config, res *result) {
	sc := res.scenario
	fmt.Fprintf(out, "breaker: %s; %s; seed %d\n", breakerLine(cfg.breakerConfig), trafficLine(cfg, sc), cfg.seed)
	if line := fleetLine(cfg.fleetConfig, cfg.breakerConfig); line != "" {
		fmt.Fprintf(out, "fleet: %s\n", line)
	}
	fmt.Fprintln(out)
	nameWidth := 9
	for _, p := range sc.phases {
		nameWidth = max(nameWidth, len(p.name))
	}
	if sc.source != "" {
		printPhases(out, sc, nameWidth)
	}
	if !cfg.quiet {
		fmt.Fprintf(out, "%6s  %-*s %8s %8s %9s %8s %10s\n", "second", nameWidth, "phase", "offered", "allowed", "succeeded", "dropped", "drop ratio")
		for i, s := range res.seconds {
			fmt.Fprintf(out, "%6d  %-*s %8d %8d %9d %8d %10.3f\n",
				i+1, nameWidth, s.phase, s.offered, s.allowed, s.succeeded, s.dropped, pct(s.dropped, s.offered)/100)
		}
		fmt.Fprintln(out)
	}

	if sc.mix.set() {
		printLevels(out, res, nameWidth)
	}
	fmt.Fprintf(out, "%-*s %9s %9s %9s %9s %9s\n", nameWidth, "phase", "length", "offered", "allowed%", "succeeded", "dropped%")
	for p, c := range res.phases {
		if sc.phases[p].length == 0 {
			continue
		}
		fmt.Fprintf(out, "%-*s %9v %9d %8.1f%% %9d %8.1f%%\n",
			nameWidth, c.phase, sc.phases[p].length, c.offered, pct(c.allowed, c.offered), c.succeeded, pct(c.dropped, c.offered))
	}
	fmt.Fprintln(out)

	f := res.figures()
	if p := res.phaseOf(roleHealthy); p >= 0 {
		c := res.phases[p]
		fmt.Fprintf(out, "healthy:  false drops                        %d (%.2f%%)\n", c.dropped, pct(c.dropped, c.offered))
	}
	if p := res.phaseOf(roleOutage); p >= 0 {
		fmt.Fprintf(out, "outage:   share that reached the dependency  %.1f%%\n", f.outageReached)
		fmt.Fprintf(out, "outage:   90%% shed, sustained, after         %s\n", formatTiming(f.shedAfter, sc.phases[p].length))
		if fr := res.fleet; fr != nil {
			lo, hi := fr.clientSpread(p)
			fmt.Fprintf(out, "outage:   share reaching it, per client      %.1f%% to %.1f%%\n", lo, hi)
			if n := cfg.cutoff; n > 0 {
				printCutoff(out, fr, p, n, cfg.clients, sc.phases[p].length)
			}
		}
	}
	if p := res.phaseOf(roleHealed); p >= 0 {
		c := res.phases[p]
		fmt.Fprintf(out, "healed:   95%% admitted, sustained, after     %s\n", formatTiming(f.admittedAfter, sc.phases[p].length))
		fmt.Fprintf(out, "healed:   dropped                            %.1f%%\n", pct(c.dropped, c.offered))
	}
	if !math.IsNaN(f.goodput) {
		attempts := "-"
		if !math.IsInf(f.attemptsPerSuccess, 1) {
			attempts = fmt.Sprintf("%.2f", f.attemptsPerSuccess)
		}
		fmt.Fprintf(out, "overload: goodput, share of capacity         %.1f%%\n", f.goodput)
		fmt.Fprintf(out, "overload: attempts per success               %s\n", attempts)
	}
	printInFlight(out, res)
	fmt.Fprintln(out)
	printComparisonRow(out, res, f)
}

// printCutoff prints the figures of outage phase p for the clients it cut
// off, the first n of clients, and for the others apart.
func printCutoff(out io.Writer, fr *fleetResult, p, n, clients int, length time.Duration) {
	cutName, healthyName := "clients 1 to "+fmt.Sprint(n), fmt.Sprintf("clients %d to %d", n+1, clients)
	if n == 1 {
		cutName = "client 1"
	}
	if n+1 == clients {
		healthyName = fmt.Sprintf("client %d", clients)
	}
	c, h := fr.group(p, 0, n), fr.group(p, n, clients)
	shed := math.Inf(1)
	if d, ok := fr.cutShedAfter(p); ok {
		shed = d.Seconds()
	}
	fmt.Fprintf(out, "outage:   cut off (%s): reached %.1f%%, dropped %.1f%%\n", cutName, pct(c.allowed, c.offered), pct(c.dropped, c.offered))
	fmt.Fprintf(out, "outage:   cut off: 90%% shed, sustained, after  %s\n", formatTiming(shed, length))
	fmt.Fprintf(out, "outage:   cut off: dropped from %v on, least    %.1f%%\n", cutSettle, fr.leastSettledDrop(0, n))
	fmt.Fprintf(out, "outage:   healthy (%s): dropped %d of %d (%.2f%%)\n", healthyName, h.dropped, h.offered, pct(h.dropped, h.offered))
}

// printInFlight prints the most calls in flight at once, if any call was,
// and the calls the client's timeout ended, per phase, if it has one.
func printInFlight(out io.Writer, res *result) {
	sc := res.scenario
	if res.peakInFlight > 0 {
		fmt.Fprintf(out, "calls:    peak in flight                     %d, at %.1f s (%s)\n",
			res.peakInFlight, res.peakAt.Seconds(), sc.phases[sc.phaseAt(res.peakAt)].name)
	}
	if sc.timeout == 0 {
		return
	}
	for p, c := range res.phases {
		if sc.phases[p].length > 0 {
			fmt.Fprintf(out, "%-9s timed out                          %d (%.1f%% of those allowed)\n",
				c.phase+":", c.timedOut, pct(c.timedOut, c.allowed))
		}
	}
}

// printPhases describes the phases of a scenario file.
func printPhases(out io.Writer, sc scenario, nameWidth int) {
	latencyWidth := 9
	for _, p := range sc.phases {
		latencyWidth = max(latencyWidth, len(p.distribution.format(p.latency)))
	}
	fmt.Fprintf(out, "%-*s %9s %10s %7s %10s %*s  %s\n", nameWidth, "phase", "length", "offered/s", "errors", "capacity/s",
		latencyWidth, "latency", "role")
	for _, p := range sc.phases {
		capacity := "unlimited"
		if !math.IsInf(p.capacity, 1) {
			capacity = fmt.Sprintf("%g", p.capacity)
		}
		if p.saysOverloaded {
			capacity += "*"
		}
		r := p.role.String()
		if r == "" {
			r = "-"
		}
		fmt.Fprintf(out, "%-*s %9v %10g %6.1f%% %10s %*s  %s\n",
			nameWidth, p.name, p.length, p.rate, 100*p.errors, capacity, latencyWidth, p.distribution.format(p.latency), r)
	}
	if sc.saysOverloaded() {
		fmt.Fprintln(out, "* the calls beyond the capacity are rejected as overloaded (saysOverloaded)")
	}
	fmt.Fprintln(out)
}

// printComparisonRow prints the six figures as a Markdown table, ready to
// paste next to other configurations' rows.
func printComparisonRow(out io.Writer, res *result, f figures) {
	const dash = "–"
	falseDrops, reached, shed, admitted, goodput, attempts := dash, dash, dash, dash, dash, dash
	if p := res.phaseOf(roleHealthy); p >= 0 {
		c := res.phases[p]
		falseDrops = fmt.Sprintf("%d (%.2f %%)", c.dropped, pct(c.dropped, c.offered))
	}
	if !math.IsNaN(f.outageReached) {
		reached = fmt.Sprintf("%.1f %%", f.outageReached)
	}
	if p := res.phaseOf(roleOutage); p >= 0 {
		shed = formatTiming(f.shedAfter, res.scenario.phases[p].length)
	}
	if p := res.phaseOf(roleHealed); p >= 0 {
		admitted = formatTiming(f.admittedAfter, res.scenario.phases[p].length)
	}
	if !math.IsNaN(f.goodput) {
		goodput = fmt.Sprintf("%.1f %%", f.goodput)
	}
	switch {
	case math.IsInf(f.attemptsPerSuccess, 1):
		attempts = "no success"
	case !math.IsNaN(f.attemptsPerSuccess):
		attempts = fmt.Sprintf("%.2f", f.attemptsPerSuccess)
	}
	fmt.Fprintln(out, "| false drops while healthy | reached the dependency while down | 90 % shed after (sustained) | 95 % admitted after healing (sustained) | goodput, % of capacity | attempts per success |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	fmt.Fprintf(out, "| %s |\n", strings.Join([]string{falseDrops, reached, shed, admitted, goodput, attempts}, " | "))
}

// formatTiming writes a timing figure: seconds, or "not within" the phase.
func formatTiming(seconds float64, within time.Duration) string {
	if math.IsInf(seconds, 1) {
		return fmt.Sprintf("not within %v", within)
	}
	return fmt.Sprintf("%.1f s", seconds)
}

// printReplay prints the per-second table of a replay (unless quiet; only
// seconds with calls) and its summary.
func printReplay(out io.Writer, cfg config, res *replayResult) {
	fmt.Fprintf(out, "breaker: %s; replay of %s: %d calls over %v; seed %d\n\n",
		breakerLine(cfg.breakerConfig), cfg.replayFile, res.rows, res.span, cfg.seed)
	if !cfg.quiet {
		fmt.Fprintf(out, "%6s %8s %8s %9s %8s %13s %11s %10s\n",
			"second", "offered", "allowed", "succeeded", "dropped", "failures shed", "false drops", "drop ratio")
		for i, s := range res.seconds {
			if s.offered == 0 {
				continue
			}
			fmt.Fprintf(out, "%6d %8d %8d %9d %8d %13d %11d %10.3f\n", i+1, s.offered, s.allowed, s.succeeded,
				s.dropped, s.dropped-s.falseDrops, s.falseDrops, pct(s.dropped, s.offered)/100)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "trace:    %d calls, %d successes, %d failures\n", res.rows, res.successes, res.failures)
	fmt.Fprintf(out, "admitted: %d (%.1f%%), of which %d failed\n", res.admitted, pct(res.admitted, res.rows), res.admittedFailed)
	fmt.Fprintf(out, "dropped:  %d (%.1f%%)", res.dropped, pct(res.dropped, res.rows))
	if res.anyDrop {
		fmt.Fprintf(out, ", the first at %.1f s and the last at %.1f s", res.firstDropAt.Seconds(), res.lastDropAt.Seconds())
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "failures shed (failures avoided)     %d (%.1f%% of the failures)\n", res.failuresShed, pct(res.failuresShed, res.failures))
	fmt.Fprintf(out, "successes dropped (false drops)      %d (%.1f%% of the successes)\n", res.falseDrops, pct(res.falseDrops, res.successes))
}

// simulationChart is the chart of a simulation, phases shaded.
func simulationChart(cfg config, res *result) chart {
	c := chart{
		title:    "srebreaker simulation: " + breakerLine(cfg.breakerConfig),
		subtitle: fmt.Sprintf("%s; seed %d", trafficLine(cfg, res.scenario), cfg.seed),
		length:   res.scenario.length(),
		tl:       &res.timeline,
		levels:   res.scenario.mix.set(),
	}
	var at time.Duration
	for _, p := range res.scenario.phases {
		if p.length > 0 {
			c.bands = append(c.bands, band{name: p.name, from: at, to: at + p.length})
		}
		at += p.length
	}
	return c
}

// replayChart is the chart of a replay.
func replayChart(cfg config, res *replayResult) chart {
	return chart{
		title:    "srebreaker replay: " + breakerLine(cfg.breakerConfig),
		subtitle: fmt.Sprintf("trace %s: %d calls over %v; seed %d", cfg.replayFile, res.rows, res.span, cfg.seed),
		length:   res.span + time.Nanosecond, // the last row's time belongs in the chart
		tl:       &res.timeline,
	}
}
