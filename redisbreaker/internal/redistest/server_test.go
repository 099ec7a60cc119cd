package redistest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/redisbreaker/internal/redistest"
)

func TestServer_Stop_startsAgainOnTheSamePortEmpty(t *testing.T) {
	s := redistest.Start(t)
	assert.True(t, strings.HasPrefix(s.Addr(), "127.0.0.1:"), s.Addr())
	rdb := s.Client()
	ctx := context.Background()
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())

	s.Stop()
	assert.False(t, s.Running())
	assert.Error(t, rdb.Get(ctx, "k").Err(), "a stopped server answers nothing")

	addr := s.Addr()
	s.Start()
	assert.Equal(t, addr, s.Addr())
	var n int64
	var err error
	for range 2 { // the pooled connection to the killed server fails once
		if n, err = rdb.Exists(ctx, "k").Result(); err == nil {
			break
		}
	}
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "nothing was persisted")
}
