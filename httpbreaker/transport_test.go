package httpbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// dependency is the server the client calls. Paths:
//
//	/status/N  answers status N with the body "status N"
//	/hangup    closes the connection without an answer
//	/block     tells arrived, then waits until the client goes away
//	/echo      answers 200 with the request body
type dependency struct {
	received atomic.Int64
	arrived  chan struct{}
}

func newDependency() *dependency { return &dependency{arrived: make(chan struct{}, 16)} }

func (d *dependency) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.received.Add(1)
	switch {
	case strings.HasPrefix(r.URL.Path, "/status/"):
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		if err != nil {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, "status %d", code)
	case r.URL.Path == "/hangup":
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	case r.URL.Path == "/block":
		d.arrived <- struct{}{}
		<-r.Context().Done()
	case r.URL.Path == "/echo":
		_, _ = io.Copy(w, r.Body)
	default:
		http.NotFound(w, r)
	}
}

// setup starts a dependency and returns it, its URL, its breaker key (the
// host), a registry and a client whose Transport takes breakers from it.
func setup(t *testing.T, opts ...httpbreaker.TransportOption) (*dependency, string, string, *countingRegistry, *http.Client) {
	t.Helper()
	dep := newDependency()
	base := serve(t, dep)
	reg := newRegistry()
	client := newClient(t, append([]httpbreaker.TransportOption{httpbreaker.WithBreakers(reg.Get)}, opts...)...)
	return dep, base, strings.TrimPrefix(base, "http://"), reg, client
}

// newClient returns a client over a Transport made with opts, with its own
// connection pool.
func newClient(t *testing.T, opts ...httpbreaker.TransportOption) *http.Client {
	t.Helper()
	inner := http.DefaultTransport.(*http.Transport).Clone()
	tr, err := httpbreaker.NewTransport(inner, opts...)
	require.NoError(t, err)
	t.Cleanup(inner.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// get makes a GET request and returns the status and body, or the error.
func get(client *http.Client, u string) (int, string, error) {
	resp, err := client.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestTransport_RoundTrip_classifiesStatuses(t *testing.T) {
	for _, tc := range []struct {
		status int
		ok     bool
	}{
		{200, true}, {201, true}, {204, true}, {301, true}, {304, true},
		{400, true}, {401, true}, {403, true}, {404, true}, {409, true}, {499, true},
		{429, false},
		{500, false}, {501, false}, {502, false}, {503, false}, {504, false}, {599, false},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			_, base, key, reg, client := setup(t)
			code, body, err := get(client, fmt.Sprintf("%s/status/%d", base, tc.status))
			require.NoError(t, err, "a status is not an error")
			assert.Equal(t, tc.status, code)
			if tc.status != 204 && tc.status != 304 {
				assert.Equal(t, fmt.Sprintf("status %d", tc.status), body, "the body reaches the caller whole")
			}
			accepts, total := reg.Totals(key)
			assert.Equal(t, int64(1), total)
			if tc.ok {
				assert.Equal(t, int64(1), accepts, "status %d is a success", tc.status)
			} else {
				assert.Equal(t, int64(0), accepts, "status %d is a failure", tc.status)
			}
		})
	}
}

func TestTransport_RoundTrip_transportErrorIsFailure(t *testing.T) {
	dep, base, key, reg, client := setup(t)
	_, _, err := get(client, base+"/hangup")
	require.Error(t, err)
	assert.False(t, errors.Is(err, breaker.ErrServiceUnavailable))
	assert.Equal(t, int64(1), dep.received.Load())
	accepts, total := reg.Totals(key)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

func TestTransport_RoundTrip_callerCancelIsIgnored(t *testing.T) {
	dep, base, key, reg, client := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/block", nil)
	require.NoError(t, err)
	go func() {
		<-dep.arrived // the request reached the server
		cancel()
	}()
	_, err = client.Do(req)
	require.ErrorIs(t, err, context.Canceled)
	accepts, total := reg.Totals(key)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(0), total, "the caller gave up: recorded as neither")
	assert.Equal(t, int64(1), reg.Ignored(key), "reported through Ignore")
}

func TestTransport_RoundTrip_deadlineIsFailure(t *testing.T) {
	dep, base, key, reg, client := setup(t)
	ctx := newManualDeadline()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/block", nil)
	require.NoError(t, err)
	go func() {
		<-dep.arrived
		ctx.Expire() // the deadline passes while the server works on it
	}()
	_, err = client.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	accepts, total := reg.Totals(key)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "a deadline is a failure")
}

func TestTransport_RoundTrip_ctxAlreadyDone(t *testing.T) {
	dep, base, key, reg, client := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	body := &trackedBody{r: strings.NewReader("payload")}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/echo", body)
	require.NoError(t, err)
	_, err = client.Do(req)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(0), dep.received.Load(), "nothing is sent")
	assert.Equal(t, int64(1), body.closes.Load(), "the request body is closed")
	_, total := reg.Totals(key)
	assert.Equal(t, int64(0), total, "nothing is recorded")
}

// failUntilShedding sends 50 requests that fail, so that the breaker has
// something to shed, and returns how many it admitted.
func failUntilShedding(t *testing.T, client *http.Client, base string) int64 {
	t.Helper()
	sent := int64(0)
	for range 50 {
		code, _, err := get(client, base+"/status/503")
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			continue
		}
		require.NoError(t, err)
		if code == 503 { // else a fallback answered
			sent++
		}
	}
	return sent
}

func TestTransport_RoundTrip_dropsNeverReachTheServer(t *testing.T) {
	dep, base, key, reg, client := setup(t)
	before := failUntilShedding(t, client, base)
	require.Equal(t, before, dep.received.Load())

	sent, dropped := 0, 0
	for range 200 {
		code, _, err := get(client, base+"/status/503")
		switch {
		case err == nil:
			assert.Equal(t, 503, code)
			sent++
		case errors.Is(err, breaker.ErrServiceUnavailable):
			dropped++
			var uerr *url.Error
			require.ErrorAs(t, err, &uerr, "http.Client wraps the drop error")
			assert.Contains(t, err.Error(), `breaker "`+key+`"`, "the error names the breaker")
			assert.Contains(t, err.Error(), "HTTP 503 Service Unavailable", "and the failure reasons")
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	assert.Greater(t, dropped, 150, "a failing dependency is shed")
	assert.Equal(t, before+int64(sent), dep.received.Load(), "dropped requests never reach the server")
	_, total := reg.Totals(key)
	assert.Equal(t, before+int64(sent), total, "drops are not recorded")
}

func TestTransport_RoundTrip_dropErrorFromRoundTrip(t *testing.T) {
	dep, base, _, reg, client := setup(t)
	before := failUntilShedding(t, client, base)
	tr := httpbreaker.MustNewTransport(nil, httpbreaker.WithBreakers(reg.Get))
	drops := 0
	for range 50 {
		body := &trackedBody{r: strings.NewReader("payload")}
		req, err := http.NewRequest(http.MethodPost, base+"/echo", body)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
			assert.Nil(t, resp)
			assert.Equal(t, int64(0), body.reads.Load(), "a dropped request's body is not read")
			assert.Equal(t, int64(1), body.closes.Load(), "a dropped request's body is closed")
			drops++
			continue
		}
		_ = resp.Body.Close()
	}
	assert.Greater(t, drops, 25)
	assert.Equal(t, before+int64(50-drops), dep.received.Load())
}

func TestTransport_RoundTrip_fallback(t *testing.T) {
	var fallbacks atomic.Int64
	dep, base, _, _, client := setup(t, httpbreaker.WithFallback(func(req *http.Request, err error) (*http.Response, error) {
		fallbacks.Add(1)
		if !errors.Is(err, breaker.ErrServiceUnavailable) {
			return nil, fmt.Errorf("fallback got %v", err)
		}
		return &http.Response{
			StatusCode: http.StatusOK,
			Status:     "200 OK",
			Header:     http.Header{"X-Fallback": {"1"}},
			Body:       io.NopCloser(strings.NewReader("cached")),
			Request:    req,
		}, nil
	}))
	before := failUntilShedding(t, client, base)
	cached := 0
	for range 100 {
		code, body, err := get(client, base+"/status/503")
		require.NoError(t, err, "the fallback answers instead of an error")
		if body == "cached" {
			assert.Equal(t, 200, code)
			cached++
		} else {
			assert.Equal(t, 503, code)
		}
	}
	assert.Equal(t, int64(cached)+(50-before), fallbacks.Load())
	assert.Greater(t, cached, 50)
	assert.Equal(t, before+int64(100-cached), dep.received.Load(), "a request answered by the fallback is never sent")
}

func TestTransport_RoundTrip_bodiesBelongToTheCaller(t *testing.T) {
	dep := newDependency()
	base := serve(t, dep)
	inner := &trackingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	defer inner.base.(*http.Transport).CloseIdleConnections()
	tr := httpbreaker.MustNewTransport(inner, httpbreaker.WithBreakers(newRegistry().Get))

	for _, status := range []int{200, 404, 429, 503} {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/status/%d", base, status), nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		b := inner.bodies[len(inner.bodies)-1]
		assert.Equal(t, int64(0), b.reads.Load(), "status %d: classifying does not read the body", status)
		assert.Equal(t, int64(0), b.closes.Load(), "status %d: classifying does not close the body", status)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("status %d", status), string(body))
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, int64(1), b.closes.Load(), "status %d: the caller's Close reaches the body", status)
	}
}

func TestTransport_RoundTrip_requestBodySent(t *testing.T) {
	_, base, key, reg, client := setup(t)
	resp, err := client.Post(base+"/echo", "text/plain", strings.NewReader("hello"))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(body))
	accepts, _ := reg.Totals(key)
	assert.Equal(t, int64(1), accepts)
}

func TestTransport_RoundTrip_breakerPerHost(t *testing.T) {
	reg := newRegistry()
	client := newClient(t, httpbreaker.WithBreakers(reg.Get))
	failing, healthy := serve(t, newDependency()), serve(t, newDependency())
	before := failUntilShedding(t, client, failing)
	for range 50 {
		code, _, err := get(client, healthy+"/status/200")
		require.NoError(t, err, "another host has its own breaker")
		assert.Equal(t, 200, code)
	}
	accepts, total := reg.Totals(strings.TrimPrefix(healthy, "http://"))
	assert.Equal(t, int64(50), accepts)
	assert.Equal(t, int64(50), total)
	_, total = reg.Totals(strings.TrimPrefix(failing, "http://"))
	assert.Equal(t, before, total)
}

func TestTransport_RoundTrip_withKey(t *testing.T) {
	routeKey := func(req *http.Request) string { return req.URL.Host + " " + strings.SplitN(req.URL.Path, "/", 3)[1] }
	dep, base, host, reg, client := setup(t, httpbreaker.WithKey(routeKey))
	before := failUntilShedding(t, client, base)
	for range 50 {
		code, _, err := get(client, base+"/echo")
		require.NoError(t, err, "another route has its own breaker")
		assert.Equal(t, 200, code)
	}
	accepts, total := reg.Totals(host + " echo")
	assert.Equal(t, int64(50), accepts)
	assert.Equal(t, int64(50), total)
	_, total = reg.Totals(host + " status")
	assert.Equal(t, before, total)
	assert.Equal(t, before+50, dep.received.Load())
}

func TestTransport_RoundTrip_withClassifier(t *testing.T) {
	type seen struct {
		method string
		status int
		err    bool
	}
	var mu sync.Mutex
	var calls []seen
	classify := func(req *http.Request, resp *http.Response, err error) httpbreaker.Outcome {
		mu.Lock()
		defer mu.Unlock()
		s := seen{method: req.Method, err: err != nil}
		if resp != nil {
			s.status = resp.StatusCode
		}
		calls = append(calls, s)
		switch {
		case err != nil:
			return httpbreaker.Ignore
		case resp.StatusCode == http.StatusNotFound:
			return httpbreaker.Failure
		}
		return httpbreaker.Success
	}
	_, base, key, reg, client := setup(t, httpbreaker.WithClassifier(classify))
	_, _, err := get(client, base+"/status/404")
	require.NoError(t, err)
	_, _, err = get(client, base+"/status/503")
	require.NoError(t, err)
	_, _, err = get(client, base+"/hangup")
	require.Error(t, err)

	assert.Equal(t, []seen{{"GET", 404, false}, {"GET", 503, false}, {"GET", 0, true}}, calls)
	accepts, total := reg.Totals(key)
	assert.Equal(t, int64(1), accepts, "503 is a success here")
	assert.Equal(t, int64(2), total)
	assert.Equal(t, int64(1), reg.Ignored(key), "the transport error is ignored")
}

func TestTransport_RoundTrip_unknownOutcomeIsFailure(t *testing.T) {
	_, base, key, reg, client := setup(t, httpbreaker.WithClassifier(
		func(*http.Request, *http.Response, error) httpbreaker.Outcome { return httpbreaker.Outcome(42) }))
	_, _, err := get(client, base+"/status/200")
	require.NoError(t, err)
	accepts, total := reg.Totals(key)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

// panickingTransport is a RoundTripper that panics.
type panickingTransport struct{}

func (panickingTransport) RoundTrip(*http.Request) (*http.Response, error) { panic("transport bug") }

func TestTransport_RoundTrip_panicIsFailureAndRaised(t *testing.T) {
	reg := newRegistry()
	tr := httpbreaker.MustNewTransport(panickingTransport{}, httpbreaker.WithBreakers(reg.Get))
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	require.NoError(t, err)
	assert.PanicsWithValue(t, "transport bug", func() { _, _ = tr.RoundTrip(req) })
	accepts, total := reg.Totals("127.0.0.1:1")
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

func TestTransport_RoundTrip_classifierPanicIsFailure(t *testing.T) {
	_, base, key, reg, client := setup(t, httpbreaker.WithClassifier(
		func(*http.Request, *http.Response, error) httpbreaker.Outcome { panic("classifier bug") }))
	assert.PanicsWithValue(t, "classifier bug", func() { _, _, _ = get(client, base+"/status/200") })
	_, total := reg.Totals(key)
	assert.Equal(t, int64(1), total)
}

func TestTransport_RoundTrip_noBreakerFor(t *testing.T) {
	dep, base, key, reg, client := setup(t)
	reg.NoBreakerFor(key)
	for range 100 {
		code, _, err := get(client, base+"/status/503")
		require.NoError(t, err, "an unguarded host is never shed")
		assert.Equal(t, 503, code)
	}
	assert.Equal(t, int64(100), dep.received.Load())
}

func TestTransport_RoundTrip_concurrent(t *testing.T) {
	reg := newRegistry(breaker.WithK(1000)) // never sheds: every call is counted
	dep := newDependency()
	base := serve(t, dep)
	client := newClient(t, httpbreaker.WithBreakers(reg.Get))
	const goroutines, calls = 8, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				status := 200
				if (g+i)%5 == 0 {
					status = 500
				}
				code, _, err := get(client, fmt.Sprintf("%s/status/%d", base, status))
				assert.NoError(t, err)
				assert.Equal(t, status, code)
			}
		}()
	}
	wg.Wait()
	accepts, total := reg.Totals(strings.TrimPrefix(base, "http://"))
	assert.Equal(t, int64(goroutines*calls), total)
	assert.Equal(t, int64(goroutines*calls*4/5), accepts)
	assert.Equal(t, int64(goroutines*calls), dep.received.Load())
}

func TestNewTransport_invalidOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  httpbreaker.TransportOption
		want string
	}{
		{httpbreaker.WithRegistry(nil), "httpbreaker: invalid option: WithRegistry(nil): registry must not be nil"},
		{httpbreaker.WithKey(nil), "httpbreaker: invalid option: WithKey(nil): key function must not be nil"},
		{httpbreaker.WithClassifier(nil), "httpbreaker: invalid option: WithClassifier(nil): classifier must not be nil"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			tr, err := httpbreaker.NewTransport(nil, tc.opt)
			assert.Nil(t, tr)
			assert.ErrorIs(t, err, httpbreaker.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
			assert.PanicsWithValue(t, tc.want, func() { httpbreaker.MustNewTransport(nil, tc.opt) })
		})
	}
}

// idleCloser records CloseIdleConnections.
type idleCloser struct {
	http.RoundTripper
	closed bool
}

func (c *idleCloser) CloseIdleConnections() { c.closed = true }

func TestTransport_CloseIdleConnections(t *testing.T) {
	inner := &idleCloser{}
	client := &http.Client{Transport: httpbreaker.MustNewTransport(inner)}
	client.CloseIdleConnections()
	assert.True(t, inner.closed)
	assert.NotPanics(t, httpbreaker.MustNewTransport(panickingTransport{}).CloseIdleConnections)
}

func TestOutcome_String(t *testing.T) {
	assert.Equal(t, "success", httpbreaker.Success.String())
	assert.Equal(t, "failure", httpbreaker.Failure.String())
	assert.Equal(t, "ignore", httpbreaker.Ignore.String())
	assert.Equal(t, "Outcome(7)", httpbreaker.Outcome(7).String())
}

// Issue 11: a key function that panicked left the request body open.
func TestTransport_RoundTrip_keyPanicClosesTheRequestBody(t *testing.T) {
	dep := newDependency()
	base := serve(t, dep)
	tr := httpbreaker.MustNewTransport(http.DefaultTransport.(*http.Transport).Clone(),
		httpbreaker.WithBreakers(newRegistry().Get),
		httpbreaker.WithKey(func(*http.Request) string { panic("key bug") }))
	body := &trackedBody{r: strings.NewReader("hello")}
	req, err := http.NewRequest(http.MethodPost, base+"/echo", body)
	require.NoError(t, err)
	assert.PanicsWithValue(t, "key bug", func() { _, _ = tr.RoundTrip(req) })
	assert.Equal(t, int64(1), body.closes.Load(), "the request body is closed")
	assert.Equal(t, int64(0), dep.received.Load(), "nothing was sent")
}

// Issue 11: a classifier that panicked left the response body, which the
// caller never gets, open: its connection was never reused or freed.
func TestTransport_RoundTrip_classifierPanicClosesTheResponseBody(t *testing.T) {
	dep := newDependency()
	base := serve(t, dep)
	inner := &trackingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	defer inner.base.(*http.Transport).CloseIdleConnections()
	reg := newRegistry()
	tr := httpbreaker.MustNewTransport(inner, httpbreaker.WithBreakers(reg.Get),
		httpbreaker.WithClassifier(func(*http.Request, *http.Response, error) httpbreaker.Outcome {
			panic("classifier bug")
		}))
	req, err := http.NewRequest(http.MethodGet, base+"/status/200", nil)
	require.NoError(t, err)
	assert.PanicsWithValue(t, "classifier bug", func() { _, _ = tr.RoundTrip(req) })
	require.Len(t, inner.bodies, 1)
	assert.Equal(t, int64(1), inner.bodies[0].closes.Load(), "the response body is closed")
	_, total := reg.Totals(strings.TrimPrefix(base, "http://"))
	assert.Equal(t, int64(1), total, "recorded as a failure")
}
