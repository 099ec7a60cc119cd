// Command simulate drives a breaker against a simulated dependency on a
// virtual clock, and prints what the breaker let through and what it shed.
// It can also replay a recorded trace of calls through a breaker, to tune K
// and the window on real traffic before deploying.
//
//	go run ./examples/simulate
//	go run ./examples/simulate -k 2 -window 5s -outage 30s -seed 7
//	go run ./examples/simulate -scenario examples/simulate/testdata/slow-brownout.json -svg chart.svg
//	go run ./examples/simulate -scenario blackhole -rate 2000 -quiet
//	go run ./examples/simulate -replay examples/simulate/testdata/trace.csv -window 5s -quiet
//	go run ./examples/simulate -quiet -rates 2,5,20,200,2000 -seeds 1-5
//
// Time is virtual, so ten minutes of traffic at 2,000 requests/s simulate
// in well under a second, and the same flags and seed print the same output
// and write the same files, byte for byte.
//
// # Flags
//
// The breaker: -k, -protection, -window, -buckets, -aggression,
// -count-drops, -trust-recent, -evidence and -horizon, with the breaker's
// defaults and ranges (the options WithK, WithProtection, WithWindow,
// WithBuckets, WithAggression, WithDropsCounted, WithTrustRecent and
// WithEvidence, whose calls and horizon the last two set). -slow-call d
// sets WithSlowCall(d): a call slower than d counts as a failure, and one
// in flight longer than d counts against the dependency before it
// returns; left out (or 0), the breaker judges calls in flight against
// the latency it learned as normal. -plain selects
// the plain formula (WithPlainFormula): aggression 1, drops not counted, no
// trust in recent buckets and no evidence read back, whatever the flags
// of those say. -seed seeds the breaker's random source and the
// dependency's.
//
// The built-in scenario: the dependency is healthy with a few errors, then
// down (every call fails), then healed (with the few errors it had before),
// then overloaded (it serves only part of the offered rate; the excess
// fails, and of the rest the same few). -rate sets the requests offered
// per second (1 to 1,000,000), -errors the share of the calls served that
// fail in every phase but the outage, -capacity the share of the offered
// rate served while overloaded, and -healthy, -outage, -healed and
// -overload the length of each phase (0 leaves it out). -says-overloaded
// has the overloaded dependency say why it fails the calls beyond its
// capacity, as a server with no room that answers so: they are reported
// with srebreaker.RejectOverloaded, and the breaker then counts its drops
// as requests while such a rejection is in its window, so that about K
// calls reach the dependency per success however many are offered. The
// calls failing at -errors, and the outage's, are rejected as before; off
// by default, and it changes nothing before the overload phase. It works
// with -clients and -mix too, and cannot be combined with -record, whose
// trace says only whether a call succeeded. -latency, a
// latency as a scenario file gives it (see below), sets every phase's, 0
// by default; -timeout the client's timeout, none by default.
// testdata/standard.json is the same scenario as a file;
// testdata/standard-no-errors-after-outage.json is the scenario as it was
// until issue 20, in which the healed and overloaded dependency served
// every call it could without an error.
//
// A fleet: -clients N runs N breakers of one dependency, each offering
// the phases' rate (so the dependency sees N times it, and the built-in
// scenario's -capacity is a share of that), their calls interleaved
// evenly. Every bucket span (window/buckets), each client publishes its
// bucket history to an in-process store with the semantics of
// redisbreaker's hash in Redis and reads the others' published within the
// window, added up bucket by bucket, then decides on them and its own
// ([fleet.Member]); the clients' syncs are spread over the span.
// -share=false keeps every client on its own history; -cutoff N (1 to
// N−1 of -clients) fails the outage phase's calls of clients 1 to N only,
// cut off from the dependency, while the others' succeed; -partition is
// -cutoff 1. The report then describes the fleet, adds up its calls, and
// gives the spread over the clients of the share of the outage that
// reached the dependency; with -cutoff, the cut-off clients' figures and
// the healthy ones' apart: the share of the cut-off clients' outage calls
// that reached the dependency and that were dropped, when 90 % of their
// calls, added up, were shed, sustained (as below), the lowest share any
// of them dropped of its calls from 2 s into the outage to its end, and
// the calls the healthy clients dropped during the outage, of those they
// offered. -clients cannot be combined with -replay or -record.
//
// The rest:
//
//   - -mix weights: give the calls a criticality (see criticality.Level),
//     in the proportions of four weights, CRITICAL_PLUS, CRITICAL,
//     SHEDDABLE_PLUS and SHEDDABLE, such as 20,40,20,20; it replaces a
//     scenario file's mix. See "Criticality" below.
//   - -fifo, with a mix: the dependency serves calls first come, first
//     served, whatever their level, as one that does not read the
//     criticality does.
//   - -shuffle, with a mix: the levels of each 100 ms slot come in a random
//     order drawn from -seed, rather than spread evenly.
//   - -scenario file: simulate the phases of a scenario file instead; or
//     -scenario name, a scenario built in under that name (see "Hangs and
//     slowdowns" below).
//   - -timeout d: the client's timeout (see "Hangs and slowdowns"); it
//     replaces a scenario file's or a named scenario's; 0 for none.
//   - -replay trace: replay a trace instead of simulating.
//   - -record file: write the simulated calls to file as a trace. A
//     dropped call is written with the outcome it would have had (served if
//     its slot had capacity left, failing at the phase's error rate, drawn
//     apart from the calls that ran). Replaying the trace with the same
//     breaker flags and seed drops exactly the same calls; with other
//     flags, it shows what they would have done.
//   - -svg file: write a chart of the run: offered, admitted and succeeded
//     calls per second and the drop ratio (dropped/offered) on a second axis
//     from 0 to 1, over time, with the phases shaded. Runs up to a minute are
//     charted per 100 ms, longer ones per second or, beyond 10 minutes,
//     per a few seconds. The title (the breaker's settings) and the
//     subtitle (the traffic and the seed) wrap to the chart's width, on at
//     most three lines each, the last cut with "…" if need be, and the
//     chart grows taller to hold them; the SVG's title and desc elements
//     keep them whole.
//   - -quiet: leave out the per-second table (in a sweep, the rows per
//     seed).
//   - -rates list: sweep the built-in scenario, or a named one, over
//     these rates, a comma-separated list of requests/s such as
//     2,5,20,200,2000 (at most 100), in place of -rate.
//   - -seeds list: sweep over these seeds, a comma-separated list of seeds
//     and ranges such as 1-5 or 1,7,10-12 (at most 1,000), in place of
//     -seed; with -scenario, over the file's or the named scenario.
//
// -scenario and -replay replace the built-in scenario, so they cannot be
// combined with its flags, nor with each other; a named scenario takes
// -rate and -latency, though. -record needs a simulation, -timeout too.
// A sweep (-rates or -seeds) makes many runs, so it takes neither -svg nor
// -record, nor -replay; -rates takes no scenario file, but does take a
// named scenario.
//
// The report goes to stdout, the same with or without -svg and -record.
// Each file written is then named on stderr, even with -quiet:
//
//	wrote trace.csv (trace of 70000 calls, for -replay)
//	wrote chart.svg (SVG chart of 35s in 100ms bins)
//
// # Scenario files
//
// A scenario file is JSON: an object with a list of phases, run one after
// another, and an optional description that is ignored.
//
//	{
//	  "description": "A dependency that fails for 10 s.",
//	  "phases": [
//	    {"name": "healthy", "role": "healthy", "duration": "5s", "rate": 2000, "errors": 0.01},
//	    {"name": "outage", "role": "outage", "duration": "10s", "rate": 2000, "errors": 1, "latency": "1s"},
//	    {"name": "slow", "duration": "30s", "rate": 2000, "capacity": 1000, "latency": "200ms"}
//	  ]
//	}
//
// The fields of a phase:
//
//   - duration (required): a Go duration such as "10s" or "1m30s"; positive.
//   - rate (required): requests offered per second, 0 to 1,000,000, not
//     necessarily whole. They arrive evenly spaced, the first at the start of
//     the phase: call i at i/rate seconds, floor(duration·rate) calls in all.
//   - errors: the share of the calls the dependency serves that fail, 0 to
//     1; default 0.
//   - capacity: the calls per second the dependency can serve, ≥ 0; calls
//     beyond it fail. Room to serve is earned continuously, capacity·Δt as
//     time passes, from room for one call at the start of the phase; each
//     call served spends one, and room left unused is kept up to a second's
//     worth and one call. So it means the same at any
//     rate: 2 calls/s offered against a capacity of 1/s serve every other
//     call. Leave it out for no limit; 0 serves nothing.
//   - saysOverloaded: true if the dependency says it is overloaded when it
//     fails the calls beyond the capacity, as -says-overloaded does for the
//     built-in scenario: they are reported with
//     srebreaker.RejectOverloaded, those failing at errors with Reject;
//     default false. Only with a capacity. The table of phases marks its
//     capacity with a *, and -record refuses such a scenario.
//   - latency: from a call's admission until its outcome reaches the
//     breaker; default 0. Meanwhile the call is in flight, and later calls
//     are decided without knowing its outcome. One of:
//     a Go duration such as "200ms", the same for every call;
//     "uniform(1s,5s)", drawn uniformly between the two;
//     "tail(5ms,200ms,1s)", heavy-tailed through a median, a p99 and a
//     p99.9: the quantile function goes through (0, median/2),
//     (0.5, median), (0.99, p99), (0.999, p99.9) and (1, p99.9²/p99), the
//     logarithm of the latency linear between two points, so that the
//     longest call takes p99.9²/p99 (5 s here), what the p99.99 would be
//     if the tail kept growing as from the p99 to the p99.9; or "hang": the
//     call never answers, and the client's timeout ends it, which the
//     scenario must then give. Every duration from 0 to 1h, a tail's
//     longest included, and 0 < median ≤ p99 ≤ p99.9. The draws come from
//     a random source of their own, seeded by -seed, one draw a call
//     (none for a fixed latency).
//   - name: up to 32 characters; default "phase N".
//   - role: which figures of the comparison row the phase gives: healthy,
//     outage, healed or overload, each at most once; default none.
//
// A scenario file may also give the client's timeout, "timeout": "30s":
// a call that has not answered within it, or never answers, fails then
// (see "Hangs and slowdowns"); none by default, at most 1h.
//
// A scenario file may also give a mix, four weights as -mix takes them:
// "mix": [20, 40, 20, 20], and with it "fifo": true and "shuffle": true,
// as -fifo and -shuffle (the flags add to the file's).
// testdata/criticality.json is the criticality scenario of
// docs/design/behaviour.md; testdata/criticality-fifo.json the same against a
// dependency that serves first come, first served, the levels shuffled.
//
// Unknown fields are errors. A run may last at most 24 hours and make at most
// 100 million calls. Errors name the line (for JSON syntax) or the phase and
// field that was wrong.
//
// # Hangs and slowdowns
//
// A call is asked about (Allow) when it is made and its outcome is
// reported (Accept or Reject) when it ends, so that with latencies many
// calls are in flight at once. With a client's timeout, a call that has
// not answered by then (at latency ≥ timeout, or never, for a hang) is
// reported as failed, with the reason "context deadline exceeded", at
// exactly its start plus the timeout: a call made while the dependency
// hangs times out even if the dependency healed meanwhile. Its latency
// is drawn, and its fate decided, when it is made, by the phase in force
// then.
//
// These scenarios are built in, selected by name with -scenario; each
// runs at its own rate unless -rate says otherwise, with a client's
// timeout of 30 s unless -timeout does, and fails no call outright:
//
//   - blackhole, at 200 requests/s: healthy for 10 s, answering in
//     tail(5ms,25ms,100ms); hung for 40 s (latency hang; role outage), so
//     that its calls time out 30 s after they were made, until 30 s after
//     healing; healed for 40 s (role healed), as before.
//     testdata/blackhole.json is the same scenario as a file.
//   - slowdown, at 200 requests/s: answering in 5 ms for 10 s, in 2 s for
//     20 s (role outage), then in 5 ms for 20 s (role healed).
//   - heavy-tail, at 200 requests/s: healthy for 60 s, answering in
//     tail(5ms,200ms,1s).
//   - long-calls, at 50 requests/s: healthy for 60 s, answering in
//     uniform(1s,5s).
//   - long-polls, at 10 requests/s: healthy for 60 s, each call a long
//     poll answered after 20 s.
//
// The last three are healthy throughout (role healthy): any call dropped
// is a false drop. -latency replaces the latency of the phases in which
// the dependency is well: all but the hang and the slow phase.
//
// # Traces
//
// A trace is CSV, one offered call per row: timestamp,outcome or
// timestamp,outcome,latency.
//
//   - timestamp: seconds since the start as a decimal number with up to nine
//     decimals (12.5), or RFC 3339 with optional fractional seconds
//     (2024-01-01T00:00:00.5Z), counted from the first row. All rows use
//     the same kind, in non-decreasing order (sort the file by its first
//     column), spanning at most 7 days.
//   - outcome: what the call returns if admitted: success, ok, 1 or true;
//     failure, error, 0 or false (any case).
//   - latency: optional, a Go duration as in a scenario.
//
// A first row whose timestamp starts with a letter is a header and is
// skipped; lines starting with # are comments. The trace streams through, so
// its length is bounded only by the 7 days; a line longer than 4 KiB, or more
// than 1 MiB without a row (a quote left open), is an error. Errors name the
// line.
//
// A replay offers each row to the breaker at its time and reports an
// admitted row's outcome after its latency. It prints, per second with
// calls (unless -quiet), the calls offered, allowed, succeeded and dropped,
// the dropped calls that would have failed (failures shed: load the
// dependency was spared) and those that would have succeeded (false drops),
// then the totals.
//
// # What a simulation prints
//
// Calls are counted by the time they were offered. Per second (unless
// -quiet): the phase, the calls offered, allowed, succeeded and dropped, and
// the drop ratio, dropped/offered over that second: the breaker's drop
// probability as the calls saw it. Then per phase: its length, the calls
// offered, the share allowed, the calls that succeeded and the share
// dropped. Then the figures below, each from the phase with the role it
// names, both as lines and as a Markdown table row, in which a figure whose
// role no phase has (or whose phase offered nothing) reads "–":
//
//   - false drops while healthy: the calls dropped during the healthy phase,
//     and their share of its calls.
//   - share of the outage that reached the dependency: the outage phase's
//     calls that were admitted, as a share of those offered.
//   - 90 % shed, sustained, after: from the start of the outage phase to
//     the end of the first 100 ms slot (counted from the phase's start) from
//     which at least 90 % of the calls offered were dropped in 3 slots in a
//     row: one slot may get there by chance, a user means shed and staying
//     so. Slots without calls are skipped: they neither count nor break the
//     run. "not within" the phase's length if no 3 slots in a row get there.
//   - 95 % admitted, sustained, after: the same for the healed phase, with
//     at least 95 % of the calls admitted; 0.1 s if the first 3 slots
//     already were.
//   - goodput, share of capacity: the calls that succeeded during the
//     overload phase, as a share of the most the dependency could serve,
//     the lesser of the calls offered and capacity × the phase's length.
//     Left out when that is 0.
//   - attempts per success: the overload phase's admitted calls per call that
//     succeeded.
//
// Then, if any call was in flight, the peak calls in flight: the most
// calls admitted at once whose outcome had not reached the breaker yet
// (a fleet's, added up), with when and in which phase it was first
// reached; and, with a client's timeout, per phase, the calls made then
// that timed out, and their share of those allowed. In the named
// scenarios, the outage's figures are those of the hang or the
// slowdown: from its start until 90 % of the calls were dropped,
// sustained, and the share of its calls that reached the dependency; the
// healed phase's, from healing (or the latency's return) until 95 % were
// admitted, sustained.
//
// The built-in scenario gives each phase the role it is named after; the
// healed phase also prints the share of its calls that were dropped.
//
// # What a sweep prints
//
// A line on the breaker, the scenario and the seeds; then, unless -quiet, a
// Markdown table with a row per rate and seed; then one with a row per
// rate, each figure the worst over the seeds: the largest share of the
// outage that reached the dependency, the slowest shed and readmission,
// the most false drops, the lowest goodput, the most attempts per success.
// The figures are those above, in the order: outage reaching the
// dependency, 90 % shed after (sustained), 95 % admitted after healing
// (sustained), false drops while healthy, overload goodput, attempts per
// success.
//
// # Criticality
//
// With a mix, each call is given a level in the mix's proportions, spread
// evenly (the same mix always gives the same sequence), or with -shuffle
// the levels of each 100 ms slot's calls, taken from that sequence, in a
// random order drawn from -seed; each call is asked about
// through AllowCtx with the level in its context. The dependency then sheds
// as a server that reads the criticality does: in each 100 ms slot of a
// phase with a capacity, a call is served while the calls served so far,
// plus those of higher levels still expected in the slot (as many as the
// previous slot brought, less those already come), stay within the slot's
// capacity. With -fifo, and without a mix, the dependency serves calls
// first come, first served, whatever their level.
//
// The report then adds a table of each phase's calls per level (offered,
// the share allowed, succeeded and dropped, and the level's share of the
// phase's drops) and, for the overload phase, each level's share of
// succeeded calls, that share of what the capacity left it once the higher
// levels were served, and its share of the drops. The chart adds a dotted
// line of successes per level.
package main
