//go:build unix

package faulttest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/goredisbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// A consumer blocked in BLPOP for as long as it asked is never counted
// against the node as a command that does not come back, while the
// breaker, which learned how long the node's commands take, counts one
// still out after a few times that: goredisbreaker passes blocking
// commands by (issue 27).
func TestInstrument_blockingCommandIsNotOut(t *testing.T) {
	addr, err := redisAddr()
	require.NoError(t, err)
	mock := clock.NewMock()
	mock.Set(start)
	reg := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, goredisbreaker.Instrument(c, goredisbreaker.WithRegistry(reg)))
	ctx := context.Background()
	key := strings.ReplaceAll(t.Name(), "/", "-")
	quick := func() { require.NoError(t, c.Set(ctx, key+":v", "x", 0).Err()) }

	// The breaker learns that the node's commands come back within a bucket.
	for range 60 {
		quick()
		mock.Add(20 * time.Millisecond)
	}
	popped := make(chan error, 1)
	go func() { popped <- c.BLPop(ctx, 0, key).Err() }()
	// Wait until the server holds it: CLIENT LIST names the blocked command.
	for {
		list, err := c.ClientList(ctx).Result()
		require.NoError(t, err)
		if strings.Contains(list, "cmd=blpop") {
			break
		}
	}
	// The consumer stays blocked for 5 s, 50 times the normal.
	for range 50 {
		mock.Add(100 * time.Millisecond)
		quick()
	}
	require.NoError(t, c.RPush(ctx, key, "job").Err())
	require.NoError(t, <-popped)
	st := (reg.Get(goredisbreaker.DefaultKey(addr))).Stats()
	assert.Zero(t, st.TotalFailures, "failures: %v", st.Reasons)
	assert.Zero(t, st.TotalDrops)
}
