package otelbreaker

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/srebreaker/srebreaker/internal/drophook"
)

// DropEvent is the name of the span event a dropped call adds, with
// [TraceDrops].
const DropEvent = "srebreaker.drop"

// The attributes of a [DropEvent], besides [BreakerKey] and
// [CriticalityKey].
const (
	// DropProbabilityKey is the drop probability of the call's level when
	// the breaker dropped it; 1 for a call an operator's override dropped.
	DropProbabilityKey attribute.Key = "srebreaker.drop_probability"
	// LastFailureKey is the breaker's newest failure reason, left out when
	// it holds none.
	LastFailureKey attribute.Key = "srebreaker.last_failure"
	// ForcedKey is true for a call an operator's override dropped.
	ForcedKey attribute.Key = "srebreaker.forced"
)

// TraceDrops makes every breaker of the process say, in the trace of a
// call it drops, why: the span in the call's context (the span otelhttp,
// otelgrpc or connect's otelconnect started for the request, or your own)
// gets a [DropEvent] naming the breaker ([BreakerKey]), the call's
// criticality ([CriticalityKey]), the drop probability
// ([DropProbabilityKey]), the breaker's last failure reason
// ([LastFailureKey]) and whether an override forced the drop
// ([ForcedKey]), and its status is set to Error with the drop error's
// text, as otelhttp and otelgrpc set it for a failed call, unless a
// fallback given to a DoWithFallback…Ctx method serves the call. Call it
// once, when the program starts; it returns a function that turns it off
// again.
//
// It covers the calls that carry a context: AllowCtx, the Do…Ctx methods,
// breaker.Call, and the integrations (httpbreaker's Transport, grpcbreaker's
// and connectbreaker's interceptors), which all ask through AllowCtx.
// Under otelhttp's Transport the span is the request's client span. A gRPC
// call dropped by grpcbreaker's client interceptor never starts, so
// otelgrpc's stats handler makes no span for it: the event goes on the
// span of the work that made the call (the server span of the request
// being served, or one of your own). A call whose context holds no
// recording span costs a check of the span, on the drop's path alone; a
// call that is admitted costs nothing more, traced or not.
func TraceDrops() (stop func()) {
	return drophook.Set(traceDrop)
}

// traceDrop adds the drop event to the span in ctx, if it records.
func traceDrop(ctx context.Context, d drophook.Drop) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		BreakerKey.String(d.Breaker),
		CriticalityKey.String(d.Criticality.String()),
		DropProbabilityKey.Float64(d.Probability),
		ForcedKey.Bool(d.Forced),
	}
	if d.Reason != "" {
		attrs = append(attrs, LastFailureKey.String(d.Reason))
	}
	span.AddEvent(DropEvent, trace.WithAttributes(attrs...))
	if !d.Fallback {
		span.SetStatus(codes.Error, d.Err.Error())
	}
}
