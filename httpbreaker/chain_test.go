package httpbreaker_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/override"
)

// down is a dependency that is down: it answers 500 to everything.
func down(t *testing.T) string {
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
}

// relay is a handler that calls url through client in its request's
// context and answers 502 when that call fails, 200 otherwise; then, for
// a request with ?panic, it panics, and for one with ?own, it answers 500
// without calling anything.
func relay(client *http.Client, url string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("own") {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if r.URL.Query().Has("panic") {
			panic("boom")
		}
		if err != nil {
			http.Error(w, "dependency: "+err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode >= 500 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
}

// guardedClient is an http.Client over a Transport of reg.
func guardedClient(t *testing.T, reg *countingRegistry) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: httpbreaker.MustNewTransport(tr, httpbreaker.WithBreakers(reg.Get))}
}

// getResp sends a GET to url through client and returns the response, its
// body read and closed.
func getResp(t *testing.T, client *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp
}

func TestHandler_ServeHTTP_dependencyFailureIsIgnoredAndAdvised(t *testing.T) {
	deps := newRegistry()
	c := down(t)
	base, reg, client := serveHandler(t, relay(guardedClient(t, deps), c))

	resp := getResp(t, client, base+"/")
	reg.WaitReported(t)

	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	assert.Equal(t, "later", resp.Header.Get(httpbreaker.RetryHeader), "the answer carries the advice")
	assert.Equal(t, [3]int64{0, 0, 1}, reg.Outcomes(httpbreaker.DefaultHandlerKey), "the server's breaker counts neither")
	assert.Equal(t, [3]int64{0, 1, 0}, deps.Outcomes(strings.TrimPrefix(c, "http://")), "the dependency's breaker counts the failure")
	assert.True(t, httpbreaker.ShedByServer(resp), "a client up the chain counts it as neither")
}

func TestHandler_ServeHTTP_dependencyDropIsIgnoredAndAdvised(t *testing.T) {
	deps := newRegistry()
	c := down(t)
	host := strings.TrimPrefix(c, "http://")
	require.NoError(t, deps.Registry.Get(host).SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Hour, Reason: "test"}))
	base, reg, client := serveHandler(t, relay(guardedClient(t, deps), c))

	resp := getResp(t, client, base+"/")
	reg.WaitReported(t)

	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	assert.Equal(t, "later", resp.Header.Get(httpbreaker.RetryHeader))
	assert.Equal(t, [3]int64{0, 0, 1}, reg.Outcomes(httpbreaker.DefaultHandlerKey))
}

func TestHandler_ServeHTTP_ownFailureCounts(t *testing.T) {
	deps := newRegistry()
	base, reg, client := serveHandler(t, relay(guardedClient(t, deps), down(t)))

	resp := getResp(t, client, base+"/?own")
	reg.WaitReported(t)

	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Empty(t, resp.Header.Values(httpbreaker.RetryHeader), "no advice for the server's own failure")
	assert.Equal(t, [3]int64{0, 1, 0}, reg.Outcomes(httpbreaker.DefaultHandlerKey))
}

func TestHandler_ServeHTTP_panicAfterDependencyFailureCounts(t *testing.T) {
	deps := newRegistry()
	base, reg, client := serveHandler(t, relay(guardedClient(t, deps), down(t)))

	_, err := client.Get(base + "/?panic")
	require.Error(t, err, "the server aborts the connection")
	reg.WaitReported(t)

	assert.Equal(t, [3]int64{0, 1, 0}, reg.Outcomes(httpbreaker.DefaultHandlerKey), "a panic is the server's own")
}

// A chain client → A → B → C, each a Handler over a handler that calls
// the next through a Transport, with C down: only B's breaker for C
// sheds.
func TestHandler_ServeHTTP_chainShedsNearestTheFailure(t *testing.T) {
	regs := map[string]*countingRegistry{"client": newRegistry(), "A": newRegistry(), "B": newRegistry()}
	c := down(t)
	b := serve(t, httpbreaker.MustNewHandler(relay(guardedClient(t, regs["B"]), c), httpbreaker.WithBreakers(regs["B"].Get)))
	a := serve(t, httpbreaker.MustNewHandler(relay(guardedClient(t, regs["A"]), b), httpbreaker.WithBreakers(regs["A"].Get)))
	client := guardedClient(t, regs["client"])

	const n = 300
	for range n {
		resp, err := client.Get(a + "/")
		require.NoError(t, err, "the client's breaker never drops")
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
		assert.NotEmpty(t, resp.Header.Get(httpbreaker.RetryHeader))
	}

	drop := func(reg *countingRegistry, key string) float64 { return reg.Registry.Get(key).Stats().DropProbability }
	host := func(url string) string { return strings.TrimPrefix(url, "http://") }
	assert.Zero(t, drop(regs["client"], host(a)), "the client's breaker for A")
	assert.Zero(t, drop(regs["A"], httpbreaker.DefaultHandlerKey), "A's Handler")
	assert.Zero(t, drop(regs["A"], host(b)), "A's breaker for B")
	assert.Zero(t, drop(regs["B"], httpbreaker.DefaultHandlerKey), "B's Handler")
	assert.Greater(t, drop(regs["B"], host(c)), 0.9, "B's breaker for C")
	st := regs["B"].Registry.Get(host(c)).Stats()
	assert.Greater(t, st.TotalDrops, int64(n*8/10), "most calls to C are dropped")
	assert.Equal(t, int64(0), regs["A"].Registry.Get(host(b)).Stats().TotalFailures)
}

// A dependency that hangs, or answers late, is counted by the breaker of
// the call made to it, once: the request that waits on it is not out for
// its route's breaker meanwhile, with the overload limit on or off.
func TestHandler_ServeHTTP_slowDependencyIsCountedOnce(t *testing.T) {
	for _, limit := range []bool{true, false} {
		t.Run(fmt.Sprintf("limit=%v", limit), func(t *testing.T) {
			mock := clock.NewMock()
			slow := breaker.WithSlowCall(200 * time.Millisecond)
			route := breaker.MustNewRegistry(breaker.WithClock(mock), slow)
			deps := breaker.MustNewRegistry(breaker.WithClock(mock), slow)
			called, release := make(chan struct{}), make(chan struct{})
			dep := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				close(called)
				<-release
			}))
			tr := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(tr.CloseIdleConnections)
			client := &http.Client{Transport: httpbreaker.MustNewTransport(tr, httpbreaker.WithRegistry(deps))}
			h := httpbreaker.MustNewHandler(relay(client, dep), httpbreaker.WithRegistry(route),
				httpbreaker.WithOverloadLimit(limit))
			httpbreaker.SetOverloadClock(h, mock)
			a := serve(t, h)

			answered := make(chan int, 1)
			go func() {
				resp, err := http.Get(a)
				if err != nil {
					answered <- 0
					return
				}
				_ = resp.Body.Close()
				answered <- resp.StatusCode
			}()
			<-called
			mock.Add(time.Second) // the dependency's call is out for a second
			rb := route.Get(httpbreaker.DefaultHandlerKey)
			db := deps.Get(strings.TrimPrefix(dep, "http://"))
			assert.Equal(t, int64(1), db.Stats().TotalFailures, "the dependency's breaker counts it out, overdue")
			assert.Zero(t, rb.Stats().TotalFailures, "the route's breaker does not: its request waits on the dependency")
			close(release)
			require.Equal(t, http.StatusOK, <-answered)
			st := rb.Stats()
			assert.Zero(t, st.TotalFailures, "the route's request was not slow: its dependency was")
			assert.Equal(t, int64(1), st.TotalSuccesses)
			assert.Equal(t, int64(1), db.Stats().TotalFailures, "counted once, overdue")
		})
	}
}
