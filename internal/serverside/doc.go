// Package serverside is what every server-side transport of this module
// (httpbreaker's Handler, grpcbreaker's server interceptors,
// connectbreaker's HandlerInterceptor) decides alike, written once: the
// overload limit in front of the handlers ([Limiter], its rules in
// docs/design/overload.md), the advice a shedding or overloaded server
// gives on retrying ([Overload.Shedding], [Overload.Served],
// [Overload.Rejecting]), the probe it serves while its dependency looks
// down ([Overload.Probe]), the rule by which it believes a caller's
// criticality ([Policy]) and the attempt number it reads ([ParseAttempt],
// [AfterPrevious]); and the checks of the options every transport has,
// client and server ([Breakers], [Policy.Check]). A transport adds only
// its wire format: the headers, metadata, trailers and status codes that
// carry these.
//
// Its types are safe for concurrent use by multiple goroutines, except
// where a comment says otherwise.
package serverside
