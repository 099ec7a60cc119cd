package main

import (
	"math"
	"slices"
	"strings"
	"time"
)

// namedTimeout is the client's timeout in the named scenarios, unless
// -timeout says otherwise.
const namedTimeout = 30 * time.Second

// wellLatency is the latency of a dependency that is well: the latency of
// the phases that are neither hung nor slow, unless -latency says
// otherwise.
type wellLatency struct {
	base         time.Duration
	distribution distribution
}

// namedScenario is a scenario built in under a name, which -scenario
// selects: its phases at a rate that -rate can change, with a timeout that
// -timeout can change and a latency while the dependency is well that
// -latency can change. None of its phases fails a call outright: the
// dependency is hung, slow or well.
type namedScenario struct {
	about  string      // what it shows, for the usage
	rate   int         // requests/s offered, unless -rate says otherwise
	well   wellLatency // unless -latency says otherwise
	phases func(well wellLatency) []phase
}

// smallTail is the latency of a dependency that answers in 5 ms, with the
// small tail of one that is well: 25 ms at p99, 100 ms at p99.9.
var smallTail = wellLatency{distribution: distribution{shape: shapeTail, median: 5 * time.Millisecond,
	p99: 25 * time.Millisecond, p999: 100 * time.Millisecond}}

// namedScenarios are the scenarios -scenario selects by name, for issue
// 27: a dependency that hangs or slows down, and healthy ones whose calls
// are slow by nature, on which the breaker must drop nothing.
var namedScenarios = map[string]namedScenario{
	"blackhole": {
		about: "healthy for 10 s, then hung for 40 s (calls never answer; the 30 s timeout ends them), then healed for 40 s",
		rate:  200, well: smallTail,
		phases: func(well wellLatency) []phase {
			return []phase{
				wellPhase("healthy", roleHealthy, 10*time.Second, well),
				{name: "hang", role: roleOutage, length: 40 * time.Second, distribution: distribution{shape: shapeHang}},
				wellPhase("healed", roleHealed, 40*time.Second, well),
			}
		},
	},
	"slowdown": {
		about: "answers in 5 ms for 10 s, in 2 s for 20 s (no errors), then in 5 ms again for 20 s",
		rate:  200, well: wellLatency{base: 5 * time.Millisecond},
		phases: func(well wellLatency) []phase {
			return []phase{
				wellPhase("healthy", roleHealthy, 10*time.Second, well),
				{name: "slow", role: roleOutage, length: 20 * time.Second, latency: 2 * time.Second},
				wellPhase("healed", roleHealed, 20*time.Second, well),
			}
		},
	},
	"heavy-tail": {
		about: "healthy for 60 s, with a heavy tail: 5 ms median, 200 ms p99, 1 s p99.9",
		rate:  200,
		well: wellLatency{distribution: distribution{shape: shapeTail, median: 5 * time.Millisecond,
			p99: 200 * time.Millisecond, p999: time.Second}},
		phases: healthyControl,
	},
	"long-calls": {
		about:  "healthy for 60 s, every call taking 1 to 5 s",
		rate:   50,
		well:   wellLatency{distribution: distribution{shape: shapeUniform, low: time.Second, high: 5 * time.Second}},
		phases: healthyControl,
	},
	"long-polls": {
		about:  "healthy for 60 s, every call a long poll answered after 20 s",
		rate:   10,
		well:   wellLatency{base: 20 * time.Second},
		phases: healthyControl,
	},
}

// healthyControl is the one phase of a dependency that is healthy
// throughout: any call dropped is a false drop.
func healthyControl(well wellLatency) []phase {
	return []phase{wellPhase("healthy", roleHealthy, time.Minute, well)}
}

// wellPhase is a phase in which the dependency answers every call, without
// an error, after the well latency.
func wellPhase(name string, r role, length time.Duration, well wellLatency) phase {
	return phase{name: name, role: r, length: length, latency: well.base, distribution: well.distribution}
}

// namedScenarioNames lists the names -scenario takes, sorted.
func namedScenarioNames() []string {
	var names []string
	for name := range namedScenarios {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// namedScenarioList is the names, as the usage lists them.
func namedScenarioList() string { return strings.Join(namedScenarioNames(), ", ") }

// build returns the named scenario at rate requests/s, each phase's, with
// the client's timeout and the latency while well.
func (n namedScenario) build(name string, rate int, timeout time.Duration, well wellLatency) scenario {
	s := scenario{source: name, timeout: timeout, phases: n.phases(well)}
	for i := range s.phases {
		s.phases[i].rate = float64(rate)
		s.phases[i].capacity = math.Inf(1)
	}
	return s
}
