package redisbreaker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// An operator's override set through one sharer reaches every process's
// breaker within a round, lasts its TTL from when it was set, and is
// cleared fleet-wide as it was set.
func TestSharer_SetOverride_everyProcessObeys(t *testing.T) {
	srv := startRedis(t)
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a")
	b := newProcess(t, srv, clk, "b")
	ops, err := redisbreaker.New(srv.client(), redisbreaker.WithClock(clk), redisbreaker.WithPrefix("test:"))
	require.NoError(t, err)
	ctx := context.Background()

	require.NoError(t, ops.SetOverride(ctx, "payments", override.Spec{Mode: override.ShedAll, TTL: 5 * time.Minute,
		Reason: "database failover", By: "alice"}))
	for _, p := range []*process{a, b} {
		_, err := p.b.Allow()
		require.NoError(t, err, "not before the process's next round")
		require.NoError(t, p.sync(t))
		_, err = p.b.Allow()
		require.ErrorIs(t, err, breaker.ErrForced, "after it")
		assert.ErrorContains(t, err, `forced open by "alice"`)
		assert.ErrorContains(t, err, "database failover")
		o, ok := p.b.Override()
		require.True(t, ok)
		assert.Equal(t, clk.Now().Add(5*time.Minute), o.Expires)
	}

	// A process that joins later takes what is left of the TTL.
	clk.advance(3 * time.Minute)
	c := newProcess(t, srv, clk, "c")
	require.NoError(t, c.sync(t))
	o, ok := c.b.Override()
	require.True(t, ok)
	assert.Equal(t, 2*time.Minute, o.Remaining(clk.Now()), "the TTL counts from when it was set")

	// Cleared fleet-wide: each process clears what it took from the fleet,
	// but not an override set on its breaker since.
	require.NoError(t, b.b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Minute, By: "bob"}))
	require.NoError(t, ops.ClearOverride(ctx, "payments"))
	for _, p := range []*process{a, b, c} {
		require.NoError(t, p.sync(t))
	}
	_, ok = a.b.Override()
	assert.False(t, ok, "a obeys the fleet's clear")
	o, ok = b.b.Override()
	require.True(t, ok, "b keeps its own")
	assert.Equal(t, "bob", o.By)
	_, err = a.b.Allow()
	assert.NoError(t, err)

	// An override ends on its own, in every process, at its TTL.
	require.NoError(t, ops.SetOverride(ctx, "payments", override.Spec{Mode: override.ShedAll, TTL: time.Second, By: "carol"}))
	require.NoError(t, a.sync(t))
	_, err = a.b.Allow()
	require.ErrorIs(t, err, breaker.ErrForced)
	clk.advance(time.Second)
	_, err = a.b.Allow()
	assert.NoError(t, err, "expired")
	require.NoError(t, a.sync(t), "Redis may still hold it on its own clock: the sharer reads its TTL")
	_, ok = a.b.Override()
	assert.False(t, ok)
}

func TestSharer_SetOverride_invalid(t *testing.T) {
	srv := startRedis(t)
	s, err := redisbreaker.New(srv.client(), redisbreaker.WithPrefix("test:"))
	require.NoError(t, err)
	ctx := context.Background()
	for _, tc := range []struct {
		o    override.Spec
		want string
	}{
		{override.Spec{Mode: override.ShedAll}, "TTL 0s: must be above 0 and at most 24h0m0s"},
		{override.Spec{Mode: override.ShedAll, TTL: -time.Second}, "TTL -1s"},
		{override.Spec{Mode: override.ShedNone, TTL: 25 * time.Hour}, "TTL 25h0m0s"},
		{override.Spec{TTL: time.Minute}, "Mode Mode(0): must be shed_all or shed_none"},
	} {
		err := s.SetOverride(ctx, "payments", tc.o)
		assert.ErrorIs(t, err, breaker.ErrInvalidOverride)
		assert.ErrorContains(t, err, tc.want)
	}
	assert.ErrorContains(t, s.SetOverride(ctx, strings.Repeat("x", 1025), override.Spec{Mode: override.ShedAll, TTL: time.Minute}),
		"breaker name of 1025 bytes: at most 1024")
	n, err := srv.client().Exists(ctx, "test:{payments}:override").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing written")
}

// An override in Redis that the sharer cannot read leaves the breaker as
// it was, and is logged once.
func TestSharer_Sync_unusableOverride(t *testing.T) {
	srv := startRedis(t)
	clk := newVirtualClock()
	a := newProcess(t, srv, clk, "a")
	ctx := context.Background()
	for _, v := range []string{"garbage", "1 0 60000 7 0 ", "1 0 60000 1 99 alice", "2 0 60000 1 0 "} {
		require.NoError(t, srv.client().Set(ctx, "test:{payments}:override", v, 0).Err())
		err := a.sync(t)
		assert.ErrorIs(t, err, redisbreaker.ErrBadData, v)
		_, ok := a.b.Override()
		assert.False(t, ok, v)
	}
	assert.Equal(t, 1, a.log.count("unusable data in Redis"), "logged once")
}
