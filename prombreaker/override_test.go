package prombreaker_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/prombreaker"
)

func TestCollector_overrideScrapedOverHTTP(t *testing.T) {
	m := newMock()
	r := newRegistry(m)
	record(t, r.Get("payments"), 5, 0)
	record(t, r.Get("search"), 5, 0)
	require.NoError(t, r.Get("payments").SetOverride(override.Spec{Mode: override.ShedAll,
		TTL: time.Minute, Reason: "database failover", By: "alice"}))
	_, err := r.Get("payments").Allow()
	require.ErrorIs(t, err, breaker.ErrForced)

	reg := prometheus.NewPedanticRegistry() // also checks Collect against Describe
	require.NoError(t, reg.Register(prombreaker.MustNewCollector(r)))
	url := server(t, reg)
	families := scrape(t, url)
	mf := families["srebreaker_override"]
	require.NotNil(t, mf)
	assert.Equal(t, "1 while an operator's override is in force on the breaker, labelled with its mode "+
		"(shed_all or shed_none); absent otherwise.", mf.GetHelp())
	require.Len(t, mf.GetMetric(), 1, "a series for the breaker that holds one alone")
	labels := map[string]string{}
	for _, l := range mf.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	assert.Equal(t, map[string]string{"breaker": "payments", "mode": "shed_all"}, labels,
		"the mode, never the reason or the author")
	assert.Equal(t, 1.0, mf.GetMetric()[0].GetGauge().GetValue())
	drops, ok := sample(families, "srebreaker_drops_total", "payments")
	require.True(t, ok)
	assert.Equal(t, 0.0, drops, "a forced drop says nothing of the dependency")

	require.NoError(t, r.Get("payments").SetOverride(override.Spec{Mode: override.ShedNone,
		TTL: time.Minute}))
	mf = scrape(t, url)["srebreaker_override"]
	require.NotNil(t, mf)
	assert.Equal(t, "shed_none", mf.GetMetric()[0].GetLabel()[1].GetValue())

	m.Add(time.Minute)
	assert.NotContains(t, scrape(t, url), "srebreaker_override", "gone once it expired")
}

func TestNewCollector_modeLabelIsTaken(t *testing.T) {
	_, err := prombreaker.NewCollector(breaker.MustNewRegistry(), prombreaker.WithConstLabels(map[string]string{"mode": "x"}))
	require.ErrorIs(t, err, prombreaker.ErrInvalidOption)
	assert.Contains(t, err.Error(), `WithConstLabels("mode"="x")`)
}
