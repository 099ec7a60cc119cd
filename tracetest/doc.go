// Package tracetest checks, in its tests, what a trace shows of a call a
// breaker dropped, through the integrations as users wire them: an
// httpbreaker Transport under otelhttp's, grpcbreaker's client
// interceptor after otelgrpc's stats handler, and a breaker's DoCtx in a
// span of one's own, each with otelbreaker.TraceDrops on and the
// OpenTelemetry SDK's span recorder. It also covers connectbreaker's client interceptor. It is a module of its own so that
// otelhttp and otelgrpc stay out of the published modules' requirements;
// it is not published.
package tracetest
