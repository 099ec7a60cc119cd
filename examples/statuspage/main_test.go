package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/statuspage"
)

// snapshot returns the demo's page as JSON.
func snapshot(t *testing.T, d *demo) map[string]statuspage.Breaker {
	t.Helper()
	rec := httptest.NewRecorder()
	d.mux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path+"?format=json", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var s statuspage.Snapshot
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
	out := make(map[string]statuspage.Breaker)
	for _, b := range s.Breakers {
		out[b.Name] = b
	}
	return out
}

// advance runs the demo's traffic, 50 calls a second to each dependency,
// for d of its clock, sampling the page once a second.
func advance(t *testing.T, dm *demo, m *clock.Mock, d time.Duration) {
	t.Helper()
	for i := range int(d / (20 * time.Millisecond)) {
		m.Add(20 * time.Millisecond)
		dm.tick()
		if i%50 == 49 {
			snapshot(t, dm)
		}
	}
}

func TestDemo_paymentsFailsAndHeals(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	d := newDemo(m, 1)

	advance(t, d, m, 19*time.Second)
	s := snapshot(t, d)
	require.Len(t, s, 3)
	assert.Zero(t, s["payments"].DropProbability, "healthy for 20 s")
	assert.Positive(t, s["inventory"].DropProbability, "half its calls fail")
	assert.Len(t, s["inventory"].Criticalities, 4, "its calls ask at four levels")
	assert.Nil(t, s["payments"].Criticalities)

	advance(t, d, m, 10*time.Second) // 29 s: down since 20 s
	s = snapshot(t, d)
	assert.Greater(t, s["payments"].DropProbability, 0.8, "shed while it is down")
	require.NotEmpty(t, s["payments"].Reasons)
	assert.Equal(t, "payments: connect: connection refused", s["payments"].Reasons[0].Text)
	assert.Len(t, s["payments"].History, 29, "a sample per second")

	advance(t, d, m, 10*time.Second) // 39 s: up again since 35 s
	s = snapshot(t, d)
	assert.Zero(t, s["payments"].DropProbability, "healed")
}

func TestRun_servesThePageOnLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", 50, &out) }()

	var url string
	require.Eventually(t, func() bool {
		url = regexp.MustCompile(`http://127\.0\.0\.1:\d+/debug/breakers`).FindString(out.String())
		return url != ""
	}, 10*time.Second, 10*time.Millisecond, "the URL is printed")
	resp, err := http.Get(url + "?format=json")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	var s statuspage.Snapshot
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context was canceled")
	}
}

func TestRun_invalidFlags(t *testing.T) {
	var out bytes.Buffer
	assert.EqualError(t, run(context.Background(), "127.0.0.1:0", 0, &out), "-rate 0: must be between 1 and 1000")
}
