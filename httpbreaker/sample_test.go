package httpbreaker_test

import (
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/internal/docsample"
	"github.com/srebreaker/srebreaker/internal/transporttest"
)

var update = flag.Bool("update", false, "rewrite the guide's samples from what the code prints")

// The log lines that docs/guide/overload.md shows are a Handler's, on
// loopback, whose registry logs: its overload limit, holding one request
// in the handler and one in the queue, rejects a third, then a fourth
// takes the room of the one queued; the handler answers, and the next
// request, 2.6 s on, finds no call rejected for 2 s. Times are elided.
func TestSample_overloadLog(t *testing.T) {
	var logs transporttest.SyncBuffer
	mock := clock.NewMock()
	reg := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
	}), httpbreaker.WithRegistry(reg), httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus)))
	httpbreaker.SetOverloadClock(h, mock)
	srv := httptest.NewServer(h)
	defer srv.Close()
	httpbreaker.ForceOverload(h, httpbreaker.DefaultHandlerKey, 1, true)

	send := func(path string, level criticality.Level) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set(httpbreaker.CriticalityHeader, level.String())
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	stats := func() breaker.OverloadStats { return *reg.Get(httpbreaker.DefaultHandlerKey).Stats().Overload }
	held := make(chan int, 1)
	go func() { held <- send("/hold", criticality.Critical) }()
	<-entered
	queued := make(chan int, 1)
	go func() { queued <- send("/", criticality.Sheddable) }()
	for stats().Queued == 0 {
		runtime.Gosched() // the second request is on its way to the queue
	}
	require.Equal(t, http.StatusServiceUnavailable, send("/", criticality.Sheddable))
	mock.Add(500 * time.Millisecond)
	critical := make(chan int, 1)
	go func() { critical <- send("/", criticality.Critical) }()
	require.Equal(t, http.StatusServiceUnavailable, <-queued, "its room went to the CRITICAL request")
	close(release)
	require.Equal(t, http.StatusOK, <-held)
	require.Equal(t, http.StatusOK, <-critical)
	mock.Add(breaker.OverloadQuiet + 100*time.Millisecond)
	require.Equal(t, http.StatusOK, send("/", criticality.Sheddable))

	text := regexp.MustCompile(`time=\S+`).ReplaceAllString(logs.String(), "time=…")
	docsample.Check(t, "../docs/guide/overload.md", "overload-log", text, *update)
}
