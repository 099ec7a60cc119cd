package sqlbreaker_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

// A request served by a Handler whose query failed counts as neither on
// the Handler's breaker, and its 5xx carries the advice; a request that
// fails without a failed query counts.
func TestWrap_failedQueryInAServedRequest(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
	s := &fakeServer{hook: func(_ context.Context, op string) error {
		if op == "query" {
			return errors.New("database down")
		}
		return nil
	}}
	db := sql.OpenDB(must(sqlbreaker.Wrap(s, sqlbreaker.WithBreaker(reg.Get("db")))))
	t.Cleanup(func() { _ = db.Close() })
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("query") {
			rows, err := db.QueryContext(r.Context(), "SELECT 1")
			if err == nil {
				_ = rows.Close()
			}
		}
		w.WriteHeader(http.StatusInternalServerError)
	}), httpbreaker.WithRegistry(reg))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()

	resp, err := http.Get(base + "/?query")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "later", resp.Header.Get(httpbreaker.RetryHeader), "a failed query: the answer carries the advice")

	resp, err = http.Get(base + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Empty(t, resp.Header.Values(httpbreaker.RetryHeader), "the handler's own failure")

	require.Eventually(t, func() bool {
		st := reg.Get(httpbreaker.DefaultHandlerKey).Stats()
		return st.TotalFailures+st.TotalSuccesses > 0
	}, 10*time.Second, time.Millisecond)
	st := reg.Get(httpbreaker.DefaultHandlerKey).Stats()
	assert.Equal(t, int64(1), st.TotalFailures, "only the handler's own failure counts on its breaker")
	assert.Equal(t, int64(1), reg.Get("db").Stats().TotalFailures, "the database's breaker counts the query")
}
