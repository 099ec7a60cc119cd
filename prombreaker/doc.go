// Package prombreaker exports the breakers of package
// [github.com/srebreaker/srebreaker/breaker] as Prometheus metrics, through
// a [Collector] for github.com/prometheus/client_golang. It is a module of
// its own, so that the core module does not depend on Prometheus.
//
// A Collector reads the breakers of a [breaker.Source] when it is scraped:
// usually [breaker.DefaultRegistry], the registry behind [breaker.Get],
// which httpbreaker's Transport and Handler and grpcbreaker's
// interceptors also use unless given another; or a *[breaker.Registry] of
// your own, a type of your own with a Range method, or [Sources] for several at once. It
// keeps no state of its own and adds nothing to a breaker's call path. Each
// breaker that reports [breaker.Stats] gives one series per metric,
// labelled with its name (label "breaker"; over Sources also "source"):
//
//	srebreaker_requests_total     counter  calls that asked: successes + failures + drops
//	srebreaker_successes_total    counter  admitted calls that succeeded
//	srebreaker_failures_total     counter  admitted calls that failed
//	srebreaker_drops_total        counter  calls the breaker dropped
//	srebreaker_drop_probability   gauge    probability that a call asking now is dropped
//	srebreaker_window_successes   gauge    successes within the breaker's rolling window
//	srebreaker_window_failures    gauge    failures within the window
//	srebreaker_window_drops       gauge    drops within the window
//
// A breaker that holds an operator's override ([breaker.Breaker.SetOverride]) also
// gives, while the override is in force, one series labelled as above and
// with the override's mode (label "mode": shed_all or shed_none); the
// override's reason and author are free text, and never labels:
//
//	srebreaker_override           gauge    1 while an override is in force
//
// The calls a shed_all override drops are not in the counters above: they
// say nothing of the dependency (`override.Active` counts them).
//
// A breaker that has counted a call at a level other than the default
// (see `criticality.Level` and [breaker.Stats.Leveled]) also gives one
// series per level of each of the following, labelled as above and with
// the level's name (label "criticality": CRITICAL_PLUS, CRITICAL,
// SHEDDABLE_PLUS or SHEDDABLE); a breaker whose calls all ask at the
// default level gives none, and its series are the eight above (and the
// override's, while one is in force):
//
//	srebreaker_requests_by_criticality_total    counter  calls that asked at the level: successes + failures + drops
//	srebreaker_successes_by_criticality_total   counter  admitted calls of the level that succeeded
//	srebreaker_failures_by_criticality_total    counter  admitted calls of the level that failed
//	srebreaker_drops_by_criticality_total       counter  calls of the level the breaker dropped
//	srebreaker_drop_probability_by_criticality  gauge    probability that a call of the level asking now is dropped
//
// They are families of their own, so that sum(srebreaker_drops_total)
// still counts each call once; the levels of a breaker add up to its
// series without the label. Calls without a level count at CRITICAL, the
// default, and CRITICAL's counts are what the other levels leave of the
// breaker's: while a call at another level is between reporting its
// outcome to its level and to the breaker, they may lag behind by that
// call, never run ahead or go back.
//
// A breaker whose name a server's overload limit shares (httpbreaker's
// Handler, grpcbreaker's server interceptors, connectbreaker's
// HandlerInterceptor; see [breaker.OverloadStats]) also gives one series
// of each of the following gauges, labelled as above, and one series per
// level of the counter, labelled as above and with the level's name
// (label "criticality"); a breaker that no server uses gives none:
//
//	srebreaker_overload_limit             gauge    calls the server lets into its handlers at once, as learned
//	srebreaker_overload_in_flight         gauge    calls in the handlers now
//	srebreaker_overload_queued            gauge    calls waiting for room in the handlers
//	srebreaker_overloaded                 gauge    1 while calls arrive faster than the handlers serve them, else 0
//	srebreaker_overload_queue_held        gauge    1 while, not overloaded, a standing queue is held short, else 0
//	srebreaker_overload_rejections_total  counter  calls of the level rejected for want of room
//
// A rejection for overload is not a drop: the breaker judged the call and
// admitted it, and it is in none of the breaker's counters above.
//
// The counters count from the breaker's creation and only grow, so
// rate(srebreaker_drops_total[1m]) / rate(srebreaker_requests_total[1m]) is
// the share of calls shed over the last minute. The window gauges are what
// the breaker computes its drop probability from at the moment of the
// scrape. A call whose outcome was reported with srebreaker.Ignore, or that
// has not reported one yet, counts in none of them.
//
// Label values must be valid UTF-8 and tell series apart, and a breaker's
// name need be neither: a name that is not valid UTF-8 has each invalid
// byte written as \xNN, and a value that two breakers would share gets
// " (2)", " (3)" and so on (names valid as they are first, then the rest in
// the order of their bytes), so that one odd name never fails the scrape.
//
// Every count is exact (but for CRITICAL's lag, above).
//
// A Collector is safe for concurrent use by multiple goroutines.
package prombreaker
