package otelbreaker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/otelbreaker"
	"github.com/srebreaker/srebreaker/override"
)

// traced returns a tracer whose ended spans the recorder holds, with
// TraceDrops on for the test.
func traced(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(otelbreaker.TraceDrops())
	return rec, tp
}

// attrs returns an event's attributes by key.
func attrs(e sdktrace.Event) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range e.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestTraceDrops_doCtx(t *testing.T) {
	rec, tp := traced(t)
	b := failing(t, "payments") // sheds now

	ctx, span := tp.Tracer("test").Start(context.Background(), "charge")
	ctx = criticality.With(ctx, criticality.Sheddable)
	var err error
	for err == nil {
		err = b.DoCtx(ctx, func() error { return nil })
	}
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	span.End()

	spans := rec.Ended()
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, codes.Error, s.Status().Code)
	assert.Equal(t, err.Error(), s.Status().Description)
	var drops []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == otelbreaker.DropEvent {
			drops = append(drops, e)
		}
	}
	require.Len(t, drops, 1, "one event for the one drop")
	a := attrs(drops[0])
	assert.Equal(t, "payments", a[otelbreaker.BreakerKey].AsString())
	assert.Equal(t, "SHEDDABLE", a[otelbreaker.CriticalityKey].AsString())
	assert.Greater(t, a[otelbreaker.DropProbabilityKey].AsFloat64(), 0.5)
	assert.Equal(t, "connection refused", a[otelbreaker.LastFailureKey].AsString())
	assert.False(t, a[otelbreaker.ForcedKey].AsBool())
}

func TestTraceDrops_forcedAndCall(t *testing.T) {
	rec, tp := traced(t)
	b := breaker.MustNew(breaker.WithName("db"))
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Minute, Reason: "failover"}))
	ctx, span := tp.Tracer("test").Start(context.Background(), "query")
	_, err := breaker.Call(ctx, b, func(context.Context) (int, error) { return 1, nil })
	require.ErrorIs(t, err, breaker.ErrForced)
	span.End()

	s := rec.Ended()[0]
	require.Len(t, s.Events(), 1)
	a := attrs(s.Events()[0])
	assert.True(t, a[otelbreaker.ForcedKey].AsBool())
	assert.Equal(t, 1.0, a[otelbreaker.DropProbabilityKey].AsFloat64())
	assert.Equal(t, "CRITICAL", a[otelbreaker.CriticalityKey].AsString(), "a context without a level asks at the default")
	_, has := a[otelbreaker.LastFailureKey]
	assert.False(t, has, "no failure seen: no reason")
}

func TestTraceDrops_admittedCallsAndUntracedDropsAddNothing(t *testing.T) {
	rec, tp := traced(t)
	ctx, span := tp.Tracer("test").Start(context.Background(), "ok")
	require.NoError(t, breaker.MustNew().DoCtx(ctx, func() error { return nil }))
	span.End()
	assert.Empty(t, rec.Ended()[0].Events())
	assert.Equal(t, codes.Unset, rec.Ended()[0].Status().Code)

	b := failing(t, "x")
	for range 100 {
		_ = b.DoCtx(context.Background(), func() error { return nil }) // no span: nothing to tell, no panic
	}
}

func TestTraceDrops_stop(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otelbreaker.TraceDrops()()
	b := failing(t, "x")
	ctx, span := tp.Tracer("test").Start(context.Background(), "off")
	var err error
	for err == nil {
		err = b.DoCtx(ctx, func() error { return nil })
	}
	span.End()
	assert.Empty(t, rec.Ended()[0].Events(), "stopped: the drop is not traced")
}

// failing returns a breaker that has seen only failures, and sheds.
func failing(t *testing.T, name string) breaker.Breaker {
	t.Helper()
	b := breaker.MustNew(breaker.WithName(name))
	for range 100 {
		p, err := b.Allow()
		if err != nil {
			continue
		}
		p.Reject("connection refused")
	}
	return b
}

func TestTraceDrops_fallbackLeavesTheStatus(t *testing.T) {
	rec, tp := traced(t)
	b := failing(t, "recs")
	ctx, span := tp.Tracer("test").Start(context.Background(), "page")
	served := false
	for !served {
		_ = b.DoWithFallbackCtx(ctx, func() error { return nil }, func(error) error { served = true; return nil })
	}
	span.End()
	s := rec.Ended()[0]
	require.Len(t, s.Events(), 1, "the drop is told")
	assert.Equal(t, codes.Unset, s.Status().Code, "a fallback served the call: no error")
}
