package httpbreaker_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/override"
)

// TestHandler_overloadLimit_rejectsLowestFirstAndClientsCountIt runs a
// Handler on loopback whose overload limit holds one request in the
// handler and, overloaded, queues one SHEDDABLE request: a second is
// rejected at once, before the handler runs, with 503 and OverloadHeader,
// and the client's Transport counts that as a failure, unlike a shed
// answer; the server's breaker's listeners hear that it started
// rejecting calls.
func TestHandler_overloadLimit_rejectsLowestFirstAndClientsCountIt(t *testing.T) {
	var mu sync.Mutex
	var heard []breaker.Event
	serverReg := breaker.MustNewRegistry(breaker.WithListener(func(e breaker.Event) {
		mu.Lock()
		heard = append(heard, e)
		mu.Unlock()
	}))
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	var ran atomic.Int32
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		entered <- struct{}{}
		<-release
	}), httpbreaker.WithRegistry(serverReg), httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus)),
		httpbreaker.WithOverloadLimit(true))
	// No time passes: the limit never doubles on a stall, nor does a wait
	// reject the queued request, however slow the run.
	httpbreaker.SetOverloadClock(h, clock.NewMock())
	srv := httptest.NewServer(h)
	defer srv.Close()
	httpbreaker.ForceOverload(h, httpbreaker.DefaultHandlerKey, 1, true)

	send := func(c *http.Client, level criticality.Level) *http.Response {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		req.Header.Set(httpbreaker.CriticalityHeader, level.String())
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	first := make(chan *http.Response, 1)
	go func() { first <- send(http.DefaultClient, criticality.Sheddable) }()
	<-entered
	queued := make(chan *http.Response, 1)
	go func() { queued <- send(http.DefaultClient, criticality.Sheddable) }()
	for serverReg.Get(httpbreaker.DefaultHandlerKey).Stats().Overload.Queued == 0 {
		runtime.Gosched() // the second request is on its way to the queue
	}

	clientReg := newRegistry()
	client := &http.Client{Transport: httpbreaker.MustNewTransport(http.DefaultTransport, httpbreaker.WithBreakers(clientReg.Get))}
	resp := send(client, criticality.Sheddable)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.True(t, httpbreaker.Overloaded(resp), "the rejection says the server is overloaded")
	assert.False(t, httpbreaker.ShedByServer(resp), "and is no shed answer")
	assert.Equal(t, httpbreaker.RetryLater, resp.Header.Get(httpbreaker.RetryHeader))
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, int64(1), clientReg.Get(srv.Listener.Addr().String()).Stats().Failures,
		"the client's breaker counts the rejection, to throttle what it sends")
	assert.Equal(t, int64(1), clientReg.CountsFor(srv.Listener.Addr().String()).Overloads.Load(),
		"as an overload rejection (srebreaker.RejectOverloaded)")

	st := serverReg.Get(httpbreaker.DefaultHandlerKey).Stats()
	require.NotNil(t, st.Overload)
	assert.Equal(t, [4]int64{0, 0, 0, 1}, st.Overload.Rejected)
	assert.Equal(t, int64(0), st.Failures+st.Successes, "a rejection is not recorded on the server's breaker")
	mu.Lock()
	require.Len(t, heard, 1, "told before the rejection's answer")
	e := heard[0]
	mu.Unlock()
	assert.Equal(t, breaker.OverloadChanged, e.Kind)
	assert.Equal(t, httpbreaker.DefaultHandlerKey, e.Breaker)
	require.NotNil(t, e.Overload)
	assert.True(t, e.Overload.Rejecting)
	assert.Equal(t, [4]int64{0, 0, 0, 1}, e.Overload.Rejected)

	close(release)
	assert.Equal(t, http.StatusOK, (<-first).StatusCode)
	assert.Equal(t, http.StatusOK, (<-queued).StatusCode, "the queued request is served once the first is done")
	assert.Equal(t, int32(2), ran.Load(), "the rejected request never reached the handler")
}

// TestHandler_overloadLimit_onByDefault: a Handler made with no option
// has the limit, and its figures are in its breaker's Stats.
func TestHandler_overloadLimit_onByDefault(t *testing.T) {
	reg := breaker.MustNewRegistry()
	srv := httptest.NewServer(httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		httpbreaker.WithRegistry(reg)))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	st := reg.Get(httpbreaker.DefaultHandlerKey).Stats().Overload
	require.NotNil(t, st, "the limit is on")
	assert.Equal(t, 0, st.InFlight)
}

// TestHandler_WithOverloadLimit_offServesEveryAdmittedRequest checks that
// with the limit off nothing is queued or rejected.
func TestHandler_WithOverloadLimit_offServesEveryAdmittedRequest(t *testing.T) {
	reg := breaker.MustNewRegistry()
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		httpbreaker.WithRegistry(reg), httpbreaker.WithOverloadLimit(false))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Nil(t, reg.Get(httpbreaker.DefaultHandlerKey).Stats().Overload, "no limit, no figures")
}

// TestHandler_overloadLimit_freesTheRoomOfAGuardedCall runs, on loopback,
// a Handler whose overload limit holds one request in front of a handler
// that calls a dependency through a Transport: while the first request
// waits on a dependency that hangs, a second still reaches the handler,
// where the Transport's breaker, not the server's limit, is to judge the
// dependency.
func TestHandler_overloadLimit_freesTheRoomOfAGuardedCall(t *testing.T) {
	release := make(chan struct{})
	dep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer dep.Close()
	client := &http.Client{Transport: httpbreaker.MustNewTransport(http.DefaultTransport,
		httpbreaker.WithRegistry(breaker.MustNewRegistry()))}
	entered := make(chan struct{}, 2)
	serverReg := breaker.MustNewRegistry()
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, dep.URL, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_ = resp.Body.Close()
	}), httpbreaker.WithRegistry(serverReg), httpbreaker.WithOverloadLimit(true))
	httpbreaker.SetOverloadClock(h, clock.NewMock()) // no time passes: the limit never doubles on a stall
	srv := httptest.NewServer(h)
	defer srv.Close()
	var releasing sync.Once
	defer releasing.Do(func() { close(release) }) // before the servers close, which waits for their handlers
	httpbreaker.ForceOverload(h, httpbreaker.DefaultHandlerKey, 1, false)

	done := make(chan int, 2)
	get := func() {
		resp, err := http.Get(srv.URL)
		if !assert.NoError(t, err) {
			done <- 0
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}
	go get()
	<-entered
	go get()
	select { // the limit of one lets the second in: the first holds no room
	case <-entered:
	case <-time.After(10 * time.Second): // a bound on a bug
		t.Fatal("the second request waits for the first, which waits on its dependency")
	}
	assert.Equal(t, 0, serverReg.Get(httpbreaker.DefaultHandlerKey).Stats().Overload.Queued)
	releasing.Do(func() { close(release) })
	assert.Equal(t, http.StatusOK, <-done)
	assert.Equal(t, http.StatusOK, <-done)
}

// TestHandler_overloadLimit_figuresFollowANewBreaker: a registry that
// forgot the Handler's breaker (past its limit) makes a new one on the
// next request, and the limit's figures go to the new one.
func TestHandler_overloadLimit_figuresFollowANewBreaker(t *testing.T) {
	reg := breaker.MustNewRegistry()
	reg.SetLimit(1)
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	first := httptest.NewServer(httpbreaker.MustNewHandler(ok, httpbreaker.WithRegistry(reg)))
	defer first.Close()
	other := httptest.NewServer(httpbreaker.MustNewHandler(ok, httpbreaker.WithRegistry(reg),
		httpbreaker.WithKey(func(*http.Request) string { return "other" })))
	defer other.Close()
	get := func(url string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	get(first.URL)
	get(other.URL) // past the limit of one: the first Handler's breaker is forgotten
	get(first.URL) // a new breaker for its key
	st := reg.Get(httpbreaker.DefaultHandlerKey).Stats()
	require.NotNil(t, st.Overload, "the new breaker carries the limit's figures")
	assert.Equal(t, int64(1), st.Successes, "it is the new breaker: it has seen one request")
}

// TestHandler_overloadLimit_probeTakesItsRoom: a request the breaker drops
// but the Handler serves all the same as a probe (its dependency looks
// down) waits for its room in the overload limit like any request.
func TestHandler_overloadLimit_probeTakesItsRoom(t *testing.T) {
	reg := breaker.MustNewRegistry()
	held, hold := make(chan struct{}, 1), make(chan struct{})
	var probes atomic.Int32
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
		case "/hold":
			held <- struct{}{}
			<-hold
		default:
			probes.Add(1)
		}
	}), httpbreaker.WithRegistry(reg))
	httpbreaker.SetOverloadClock(h, clock.NewMock()) // no time passes: the limit never doubles on a stall
	srv := httptest.NewServer(h)
	defer srv.Close()
	var releasing sync.Once
	release := func() { releasing.Do(func() { close(hold) }) }
	defer release() // before the server closes
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Error(err)
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for range 3 { // three failures in a row: the dependency looks down
		require.Equal(t, http.StatusInternalServerError, get("/fail"))
	}
	httpbreaker.ForceOverload(h, httpbreaker.DefaultHandlerKey, 1, false)
	holding := make(chan int, 1)
	go func() { holding <- get("/hold") }()
	<-held // the only room is taken
	b := reg.Get(httpbreaker.DefaultHandlerKey)
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Hour}))
	for range 39 {
		require.Equal(t, http.StatusServiceUnavailable, get("/probe"), "dropped")
	}
	probe := make(chan int, 1)
	go func() { probe <- get("/probe") }() // the 40th drop in a row: a probe
	for b.Stats().Overload.Queued == 0 {
		select {
		case code := <-probe:
			t.Fatalf("the probe was answered (%d) while the only room was taken", code)
		default:
			runtime.Gosched()
		}
	}
	assert.Zero(t, probes.Load(), "the probe waits")
	release()
	assert.Equal(t, http.StatusOK, <-holding)
	assert.Equal(t, http.StatusOK, <-probe, "served once the room is free")
	assert.Equal(t, int32(1), probes.Load())
}

// TestHandler_overloadLimit_aWaitIsNoHang: a request that waits for room
// in the overload limit takes its promise of the route's breaker once let
// in, so that its wait, the server's own load, does not count as its
// dependency's slowness or hang. Here the route's breaker counts a call
// slower than 200 ms as a failure; the handler holds the only room for
// 500 ms, a second request waits for it, then is answered at once: the
// first is a failure (its handler was slow), the second a success.
func TestHandler_overloadLimit_aWaitIsNoHang(t *testing.T) {
	mock := clock.NewMock()
	reg := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithSlowCall(200*time.Millisecond))
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
	}), httpbreaker.WithRegistry(reg))
	httpbreaker.SetOverloadClock(h, mock)
	srv := httptest.NewServer(h)
	defer srv.Close()
	httpbreaker.ForceOverload(h, httpbreaker.DefaultHandlerKey, 1, false)
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}

	held := make(chan int, 1)
	go func() { held <- get("/hold") }()
	<-entered
	waiting := make(chan int, 1)
	go func() { waiting <- get("/") }()
	b := reg.Get(httpbreaker.DefaultHandlerKey)
	for b.Stats().Overload.Queued == 0 {
		runtime.Gosched() // the second request is on its way to the queue
	}
	mock.Add(500 * time.Millisecond)
	close(release)
	require.Equal(t, http.StatusOK, <-held)
	require.Equal(t, http.StatusOK, <-waiting)
	st := b.Stats()
	assert.Equal(t, int64(1), st.TotalFailures, "the handler that held the room for 500 ms was slow")
	assert.Equal(t, int64(1), st.TotalSuccesses, "the request that waited for it was answered at once")
}
