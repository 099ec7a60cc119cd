package goredisbreaker_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/goredisbreaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// A request served by a Handler whose command failed, or was dropped,
// counts as neither on the Handler's breaker, and its 5xx carries the
// advice.
func TestInstrument_failedCommandInAServedRequest(t *testing.T) {
	registry := mockRegistry()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there: the node is down
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, goredisbreaker.Instrument(rdb, goredisbreaker.WithRegistry(registry)))
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rdb.Get(r.Context(), "k").Err(); err != nil {
			w.WriteHeader(http.StatusBadGateway)
		}
	}), httpbreaker.WithRegistry(registry))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	const n = 100 // enough for the node's breaker to drop most
	for range n {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
		assert.Equal(t, "later", resp.Header.Get(httpbreaker.RetryHeader))
	}

	node := statsOf(t, registry, addr)
	assert.Positive(t, node.TotalFailures)
	assert.Positive(t, node.TotalDrops, "the node's breaker drops")
	st := registry.Get(httpbreaker.DefaultHandlerKey).Stats()
	assert.Zero(t, st.TotalFailures, "the Handler's breaker counts neither")
	assert.Zero(t, st.DropProbability)
}
