// Package otelbreaker reports the breakers of a [breaker.Source], such as
// [breaker.DefaultRegistry] or another *[breaker.Registry], through the
// OpenTelemetry metric API: per breaker, counters of the calls it saw,
// admitted and succeeded, admitted and failed, and dropped, and a gauge of
// its drop probability. It is a module of its own, so that the core module
// does not depend on OpenTelemetry.
//
// [Register] creates the instruments with a [metric.MeterProvider] (by
// default the global one) and reads every breaker's [breaker.Stats] when
// the provider collects, through one callback; nothing runs on a breaker's
// call path, which stays free of allocations. The instruments, each with
// the attribute breaker (see [BreakerKey]) holding the breaker's name:
//
//	srebreaker.requests          Int64ObservableCounter  {call}  calls asked: successes + failures + drops
//	srebreaker.successes         Int64ObservableCounter  {call}  admitted calls that succeeded
//	srebreaker.failures          Int64ObservableCounter  {call}  admitted calls that failed
//	srebreaker.drops             Int64ObservableCounter  {call}  calls dropped
//	srebreaker.drop_probability  Float64ObservableGauge  1       probability that a call asking now is dropped
//
// The counters count from the breaker's creation (cumulative, monotonic).
// Every count is exact. A breaker that reports no
// stats, such as the one [breaker.Registry.NoBreakerFor] installs, is
// skipped.
//
// Register is safe to call from multiple goroutines, and the collection
// may run while calls go through the breakers.
package otelbreaker
