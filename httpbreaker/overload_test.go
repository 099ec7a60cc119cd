package httpbreaker_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// sheddingRegistry returns a registry whose breaker for a Handler's
// default key sheds most requests: it has seen 200 failures and no success
// (the plain formula: it drops 195/201 of them), on a clock that does not
// move.
func sheddingRegistry(t *testing.T) *breaker.Registry {
	t.Helper()
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)), breaker.WithPlainFormula())
	b := reg.Get(httpbreaker.DefaultHandlerKey)
	for i := 0; i < 200; {
		if p, err := b.Allow(); err == nil {
			p.Reject("down")
			i++
		}
	}
	return reg
}

// shedOnce sends requests with the given attempt number until h sheds one,
// and returns the answer.
func shedOnce(t *testing.T, h http.Handler, attempt int) *http.Response {
	t.Helper()
	for {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if attempt > 1 {
			req.Header.Set("Srebreaker-Attempt", strconv.Itoa(attempt))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusServiceUnavailable {
			return rec.Result()
		}
	}
}

func TestHandler_ServeHTTP_adviceOnRetrying(t *testing.T) {
	h := httpbreaker.MustNewHandler(http.NotFoundHandler(), httpbreaker.WithRegistry(sheddingRegistry(t)))

	// First attempts: retry later, after Retry-After.
	for range 10 {
		resp := shedOnce(t, h, 1)
		assert.Equal(t, "later", resp.Header.Get(httpbreaker.RetryHeader))
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
		assert.True(t, httpbreaker.ShedByServer(resp))
	}
	// Retries: once most of the sheds are retries, don't retry.
	var resp *http.Response
	for range 12 {
		resp = shedOnce(t, h, 3)
	}
	assert.Equal(t, "no", resp.Header.Get(httpbreaker.RetryHeader))
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	// And so on while the server sheds, for first attempts too.
	assert.Equal(t, "no", shedOnce(t, h, 1).Header.Get(httpbreaker.RetryHeader))
}

func TestHandler_ServeHTTP_failureWhileSheddingCarriesAdvice(t *testing.T) {
	failing := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	})
	serveOne := func(h http.Handler) *http.Response {
		for {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code == http.StatusInternalServerError {
				return rec.Result()
			}
		}
	}
	shedding := httpbreaker.MustNewHandler(failing, httpbreaker.WithRegistry(sheddingRegistry(t)))
	assert.Equal(t, "later", serveOne(shedding).Header.Get(httpbreaker.RetryHeader), "served while shedding")

	calm := httpbreaker.MustNewHandler(failing, httpbreaker.WithRegistry(breaker.MustNewRegistry()))
	_, ok := serveOne(calm).Header[httpbreaker.RetryHeader]
	assert.False(t, ok, "served by a breaker that sheds nothing")
}

// markedAnswer returns an answer with status code, and with RetryHeader
// set to advice unless advice is empty.
func markedAnswer(code int, advice string) *http.Response {
	resp := &http.Response{StatusCode: code, Header: http.Header{}}
	if advice != "" {
		resp.Header.Set(httpbreaker.RetryHeader, advice)
	}
	return resp
}

// A marked answer is a shedding server's: neither on a client, nor on a
// Handler whose handler forwards it; a 429 is a Handler's success.
func TestClassifiers_markedAnswers(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range []struct {
		code           int
		advice         string
		client, server httpbreaker.Outcome
	}{
		{http.StatusServiceUnavailable, "later", httpbreaker.Ignore, httpbreaker.Ignore},
		{http.StatusServiceUnavailable, "no", httpbreaker.Ignore, httpbreaker.Ignore},
		{http.StatusInternalServerError, "later", httpbreaker.Ignore, httpbreaker.Ignore},
		{http.StatusTooManyRequests, "no", httpbreaker.Ignore, httpbreaker.Success},
		{http.StatusServiceUnavailable, "", httpbreaker.Failure, httpbreaker.Failure},
		{http.StatusInternalServerError, "", httpbreaker.Failure, httpbreaker.Failure},
		{http.StatusOK, "later", httpbreaker.Success, httpbreaker.Success},
	} {
		resp := markedAnswer(c.code, c.advice)
		assert.Equal(t, c.client, httpbreaker.ClientClassifier(req, resp, nil), "client: %d %q", c.code, c.advice)
		assert.Equal(t, c.server, httpbreaker.ServerClassifier(req, resp, nil), "server: %d %q", c.code, c.advice)
	}
	assert.False(t, httpbreaker.ShedByServer(nil))
}

func TestTransport_serverShedIsNeither(t *testing.T) {
	base := serve(t, httpbreaker.MustNewHandler(http.NotFoundHandler(), httpbreaker.WithRegistry(sheddingRegistry(t))))
	reg := newRegistry()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: httpbreaker.MustNewTransport(tr, httpbreaker.WithBreakers(reg.Get))}
	var shed int64
	for range 50 {
		resp, err := client.Get(base)
		require.NoError(t, err)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			shed++
		}
	}
	key := base[len("http://"):]
	accepts, total := reg.Totals(key)
	assert.Greater(t, shed, int64(40))
	assert.Equal(t, int64(50)-shed, accepts, "the requests served (404) are successes")
	assert.Equal(t, accepts, total, "no failure")
	assert.Equal(t, shed, reg.Ignored(key), "the sheds are neither")
}

func TestHandler_ServeHTTP_retryKeepsItsLevel(t *testing.T) {
	// As TestHandler_shedsTheLowestLevelsFirst, every request a retry: the
	// breaker has seen 60 % of 400 calls fail and drops 155/401 of them,
	// which SHEDDABLE, the lowest level, takes whole.
	m := clock.NewMock()
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)), breaker.WithPlainFormula())
	b := reg.Get(httpbreaker.DefaultHandlerKey)
	for i := 0; i < 400; {
		if p, err := b.Allow(); err == nil {
			if i%5 < 2 {
				p.Accept()
			} else {
				p.Reject("overloaded")
			}
			i++
		}
	}
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		httpbreaker.WithRegistry(reg), trusted)
	shed := func(c criticality.Level) (n int) {
		for range 40 {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Header.Set(httpbreaker.CriticalityHeader, c.String())
			req.Header.Set("Srebreaker-Attempt", "3")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code == http.StatusServiceUnavailable {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 40, shed(criticality.Sheddable), "a SHEDDABLE retry is shed")
	assert.Equal(t, 0, shed(criticality.CriticalPlus), "a CRITICAL_PLUS retry is served")
}

func TestHandler_ServeHTTP_keysAreJudgedApart(t *testing.T) {
	// Route /a's breaker sheds; route /b's fails without shedding: its
	// failures carry no advice, whatever /a does.
	reg := sheddingRegistry(t)
	byPath := httpbreaker.WithKey(func(r *http.Request) string {
		if r.URL.Path == "/a" {
			return httpbreaker.DefaultHandlerKey // the shedding breaker
		}
		return "server:" + r.URL.Path
	})
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}), httpbreaker.WithRegistry(reg), byPath)
	for range 20 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/a", nil))
		require.NotEmpty(t, rec.Header().Get(httpbreaker.RetryHeader), "/a: a shed, or a failure while shedding")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/b", nil))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	_, ok := rec.Header()[httpbreaker.RetryHeader]
	assert.False(t, ok, "/b's failure carries no advice")
}

// A gateway's Handler around a reverse proxy to a shedding server records
// the sheds it forwards as neither: the server's breaker throttles them
// already, and a gateway that counted them as failures would shed too.
func TestHandler_forwardedShedIsNeither(t *testing.T) {
	backend, err := url.Parse(serve(t, httpbreaker.MustNewHandler(http.NotFoundHandler(),
		httpbreaker.WithRegistry(sheddingRegistry(t)))))
	require.NoError(t, err)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	proxy := httputil.NewSingleHostReverseProxy(backend)
	proxy.Transport = tr
	// A gateway whose breaker never drops (protection above the requests
	// sent), so that each request it gets is reported, whatever it counts.
	reg := newRegistry(breaker.WithProtection(1000))
	gateway := serve(t, httpbreaker.MustNewHandler(proxy, httpbreaker.WithBreakers(reg.Get)))

	client := &http.Client{Transport: tr}
	shed, served := 0, 0
	for range 60 {
		resp, err := client.Get(gateway)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		switch resp.StatusCode {
		case http.StatusServiceUnavailable:
			shed++
			assert.True(t, httpbreaker.ShedByServer(resp), "the server's mark is forwarded")
		case http.StatusNotFound:
			served++
		default:
			t.Fatalf("status %d", resp.StatusCode)
		}
		<-reg.Reported() // the gateway's Handler reports after it answers
	}
	require.Positive(t, shed)
	c := reg.CountsFor(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(0), c.Rejects.Load(), "no forwarded shed is a failure")
	assert.Equal(t, int64(shed), c.Ignores.Load())
	assert.Equal(t, int64(served), c.Accepts.Load())
}

// The advice a shedding Handler adds to its own failures does not make
// them neither: they are the server's failures.
func TestHandler_ownFailureWhileSheddingIsAFailure(t *testing.T) {
	reg := newRegistry(breaker.WithPlainFormula())
	b := reg.Registry.Get(httpbreaker.DefaultHandlerKey)
	for i := 0; i < 200; {
		if p, err := b.Allow(); err == nil {
			p.Reject("down")
			i++
		}
	}
	failing := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	})
	h := httpbreaker.MustNewHandler(failing, httpbreaker.WithBreakers(reg.Get))
	failed := 0
	for failed < 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code == http.StatusInternalServerError {
			failed++
			require.Equal(t, "later", rec.Header().Get(httpbreaker.RetryHeader), "served while shedding")
		}
	}
	c := reg.CountsFor(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(failed), c.Rejects.Load())
	assert.Equal(t, int64(0), c.Ignores.Load())
}
