package otelbreaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/srebreaker/srebreaker/otelbreaker"
	"github.com/srebreaker/srebreaker/override"
)

func TestRegister_override(t *testing.T) {
	r, mock := newRegistry(t)
	record(t, r.Get("payments"), 5, 0)
	record(t, r.Get("search"), 5, 0)
	require.NoError(t, r.Get("payments").SetOverride(override.Spec{Mode: override.ShedAll,
		TTL: time.Minute, Reason: "database failover", By: "alice"}))
	reader := newReader(t, r)

	got := collect(t, reader)
	m, ok := got["srebreaker.override"]
	require.True(t, ok)
	assert.Equal(t, "1", m.Unit)
	gauge, ok := m.Data.(metricdata.Gauge[int64])
	require.True(t, ok)
	require.Len(t, gauge.DataPoints, 1, "a data point for the breaker that holds one alone")
	dp := gauge.DataPoints[0]
	assert.Equal(t, int64(1), dp.Value)
	assert.Equal(t, attribute.NewSet(otelbreaker.BreakerKey.String("payments"),
		otelbreaker.OverrideModeKey.String("shed_all")), dp.Attributes, "the mode, never the reason or the author")

	mock.Add(time.Minute)
	got = collect(t, reader)
	if m, ok := got["srebreaker.override"]; ok {
		assert.Empty(t, m.Data.(metricdata.Gauge[int64]).DataPoints, "gone once it expired")
	}
}
