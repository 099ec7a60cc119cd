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
// A breaker that has counted a call at a level other than the default
// (see `criticality.Level` and [breaker.Stats.Leveled]) also reports,
// per level, with the attributes breaker and criticality (see
// [CriticalityKey]: CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS or SHEDDABLE):
//
//	srebreaker.requests_by_criticality          Int64ObservableCounter  {call}  calls asked at the level
//	srebreaker.successes_by_criticality         Int64ObservableCounter  {call}  admitted calls of the level that succeeded
//	srebreaker.failures_by_criticality          Int64ObservableCounter  {call}  admitted calls of the level that failed
//	srebreaker.drops_by_criticality             Int64ObservableCounter  {call}  calls of the level dropped
//	srebreaker.drop_probability_by_criticality  Float64ObservableGauge  1       probability that a call of the level asking now is dropped
//
// A breaker whose calls all ask at the default level has no data points
// in them, and its data points above stay as they are. They are
// instruments of their own, so that a sum over srebreaker.drops still
// counts each call once; a breaker's levels add up to its data point
// without the attribute. Calls without a level count at CRITICAL, the
// default, whose counts are what the other levels leave of the breaker's:
// while a call at another level is between reporting its outcome to its
// level and to the breaker, they may lag behind by that call, never run
// ahead or go back.
//
// A breaker that holds an operator's override ([breaker.Breaker.SetOverride])
// also reports, while the override is in force, with the attributes
// breaker and mode (see [OverrideModeKey]: shed_all or shed_none); the
// override's reason and author are free text, and never attributes:
//
//	srebreaker.override  Int64ObservableGauge  1  1 while an override is in force
//
// The calls a shed_all override drops are not in srebreaker.drops: they say
// nothing of the dependency (`override.Active` counts them).
//
// The counters count from the breaker's creation (cumulative, monotonic).
// Every count is exact (but for CRITICAL's lag, above). A breaker that reports no
// stats, such as the one [breaker.Registry.NoBreakerFor] installs, is
// skipped.
//
// Register is safe to call from multiple goroutines, and the collection
// may run while calls go through the breakers.
package otelbreaker
