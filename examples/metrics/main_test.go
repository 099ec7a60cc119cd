package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun_dropProbabilityRisesAndFalls(t *testing.T) {
	var out bytes.Buffer
	rep, err := run(context.Background(), defaultConfig(), &out)
	require.NoError(t, err)
	require.Len(t, rep.scrapes, 20, "one scrape every 250 ms of 5 s")
	assert.Equal(t, 5*200, rep.sent+rep.shed)

	peak := 0.0
	for _, s := range rep.scrapes {
		switch {
		case s.at <= time.Second:
			assert.Equal(t, 0.0, s.probability, "at %v: healthy, nothing shed", s.at)
		case s.at <= 3*time.Second:
			assert.True(t, s.down, "at %v", s.at)
			peak = max(peak, s.probability)
		case s.at >= 3500*time.Millisecond:
			assert.Equal(t, 0.0, s.probability, "at %v: healed and let back in", s.at)
		}
		assert.Equal(t, s.successes+s.failures+s.drops, s.requests, "at %v", s.at)
	}
	assert.Greater(t, peak, 0.8, "the failing dependency is shed")

	last := rep.scrapes[len(rep.scrapes)-1]
	assert.Equal(t, float64(rep.sent), last.successes+last.failures, "every call that ran was counted")
	assert.Equal(t, float64(rep.shed), last.drops, "every drop counted")
	assert.Greater(t, last.windowSuccesses, 300.0, "the window's 2 s, healthy and admitted once the breaker let the calls back in")
	assert.Zero(t, last.windowFailures)

	assert.Contains(t, out.String(), "serving http://127.0.0.1:")
	assert.Contains(t, out.String(), " 1.50s  down        srebreaker_drop_probability{breaker=\"inventory\"} 0.")
	assert.Contains(t, out.String(), " 5.00s  up          srebreaker_drop_probability{breaker=\"inventory\"} 0\n")
	assert.Len(t, rep.final, 8*3, "eight families, each with its help, type and one series")
	assert.Contains(t, rep.final, "# TYPE srebreaker_drops_total counter")
	assert.Contains(t, rep.final, "srebreaker_window_failures{breaker=\"inventory\"} 0")
}

func TestRun_realtime(t *testing.T) {
	cfg := config{addr: "127.0.0.1:0", rate: 200, healthy: 50 * time.Millisecond, down: 50 * time.Millisecond,
		after: 50 * time.Millisecond, every: 50 * time.Millisecond, realtime: true, seed: 1}
	var out bytes.Buffer
	rep, err := run(context.Background(), cfg, &out)
	require.NoError(t, err)
	assert.Len(t, rep.scrapes, 3)
	assert.Equal(t, 30, rep.sent+rep.shed)
	assert.NotContains(t, out.String(), "virtual clock")
}

func TestRun_invalidFlags(t *testing.T) {
	var out bytes.Buffer
	cfg := defaultConfig()
	cfg.rate = 0
	_, err := run(context.Background(), cfg, &out)
	assert.EqualError(t, err, "-rate 0: must be between 1 and 10000")

	cfg = defaultConfig()
	cfg.down = -time.Second
	_, err = run(context.Background(), cfg, &out)
	assert.EqualError(t, err, "-healthy, -down and -after must not be negative")

	cfg = defaultConfig()
	cfg.every = 0
	_, err = run(context.Background(), cfg, &out)
	assert.EqualError(t, err, "-every 0s: must be positive")

	cfg = defaultConfig()
	cfg.addr = "127.0.0.1:-1"
	_, err = run(context.Background(), cfg, &out)
	assert.Error(t, err)
	assert.Empty(t, out.String(), "nothing is printed before the flags are checked")
}
