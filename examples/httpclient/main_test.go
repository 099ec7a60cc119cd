package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun_shedsAndRecovers(t *testing.T) {
	cfg := config{rate: 50, healthy: 2 * time.Second, down: 8 * time.Second, after: 12 * time.Second, seed: 1}
	var out bytes.Buffer
	rep, err := run(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Len(t, rep.seconds, 22)

	assert.Equal(t, int64(rep.total.sent), rep.received, "dropped requests never reach the server")
	assert.Equal(t, 22*50, rep.total.sent+rep.total.dropped)
	for i, s := range rep.seconds[:2] {
		assert.Equal(t, counts{sent: 50, ok: 50}, s, "second %d: healthy, nothing dropped", i+1)
	}
	outage := counts{}
	for _, s := range rep.seconds[2:10] {
		outage.add(s)
	}
	assert.Equal(t, 0, outage.ok)
	assert.Greater(t, outage.dropped, 100, "the failing server is shed")
	for i, s := range rep.seconds[18:] {
		assert.Equal(t, counts{sent: 50, ok: 50}, s, "second %d: recovered", i+19)
	}
	assert.Regexp(t, `the last drop said: Get "http://127\.0\.0\.1:\d+/": breaker: service unavailable `+
		`\(breaker "127\.0\.0\.1:\d+", last failure "HTTP 503 Service Unavailable"`, out.String())
}

func TestRun_invalidFlags(t *testing.T) {
	var out bytes.Buffer
	_, err := run(context.Background(), config{rate: 0}, &out)
	assert.EqualError(t, err, "-rate 0: must be between 1 and 1000")
	_, err = run(context.Background(), config{rate: 10, down: -time.Second}, &out)
	assert.EqualError(t, err, "-healthy, -down and -after must not be negative")
}
