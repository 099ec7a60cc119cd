package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example in real time, against a redis-server it starts: the fleet's
// shared histories shed part of an outage that no client alone would, and
// nothing while the server is healthy.
func TestRun_fleetShedsTheOutage(t *testing.T) {
	cfg := config{clients: 5, rate: 2, healthy: time.Second, down: 3 * time.Second, share: true}
	var out bytes.Buffer
	rep, err := run(context.Background(), cfg, &out)
	require.NoError(t, err)
	t.Log("\n" + out.String())
	var down, healthy tally
	for _, c := range rep.clients {
		healthy.offered += c[0].offered
		healthy.dropped += c[0].dropped
		down.offered += c[1].offered
		down.dropped += c[1].dropped
	}
	assert.Zero(t, healthy.dropped, "nothing dropped while healthy")
	assert.Greater(t, down.dropped, 0, "the fleet sheds part of the outage")
	assert.Equal(t, int64(down.offered-down.dropped), rep.received[1], "dropped calls never reach the server")
	assert.Contains(t, out.String(), "5 clients at 2 requests/s each, histories shared through Redis: true")
}

func TestRun_aloneNoClientSheds(t *testing.T) {
	cfg := config{clients: 3, rate: 2, healthy: time.Second, down: 2 * time.Second, share: false}
	rep, err := run(context.Background(), cfg, &bytes.Buffer{})
	require.NoError(t, err)
	for i, c := range rep.clients {
		assert.Zero(t, c[1].dropped, "client %d: 4 calls in its window are too few to shed alone", i+1)
	}
}

func TestRun_invalidConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  config
		want string
	}{
		{config{clients: 0, rate: 4}, "-clients 0: must be from 1 to 100"},
		{config{clients: 2, rate: 0.1}, "-rate 0.1: must be from 0.5 to 100"},
		{config{clients: 2, rate: 4, down: -time.Second}, "-healthy, -down and -healed: must not be negative, and add up to at most 1h"},
	} {
		_, err := run(context.Background(), tc.cfg, &bytes.Buffer{})
		assert.EqualError(t, err, tc.want)
	}
}
