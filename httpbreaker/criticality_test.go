package httpbreaker_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

var levels = []criticality.Level{criticality.CriticalPlus, criticality.Critical, criticality.SheddablePlus, criticality.Sheddable}

// seen notes, per request, the criticality a handler found in its context
// and the header it was sent.
type seen struct {
	mu      sync.Mutex
	level   criticality.Level
	header  string
	handled int
}

func (s *seen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.level, s.header = criticality.From(r.Context()), r.Header.Get(httpbreaker.CriticalityHeader)
	s.handled++
	s.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (s *seen) last() (criticality.Level, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level, s.header
}

// trusted is the option of a Handler that believes the header.
var trusted = httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus))

func TestTransport_Handler_carryTheCriticality(t *testing.T) {
	app := &seen{}
	base, _, _ := serveHandler(t, app, trusted)
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(breaker.MustNewRegistry()))}
	t.Cleanup(client.CloseIdleConnections)
	get := func(ctx context.Context, header string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base, nil)
		require.NoError(t, err)
		if header != "" {
			req.Header.Set(httpbreaker.CriticalityHeader, header)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if header != "" {
			assert.Equal(t, header, req.Header.Get(httpbreaker.CriticalityHeader), "the caller's request is left alone")
		} else {
			assert.Empty(t, req.Header.Get(httpbreaker.CriticalityHeader), "the caller's request is left alone")
		}
	}
	for _, c := range levels {
		get(criticality.With(context.Background(), c), "")
		level, header := app.last()
		assert.Equal(t, c, level, "the handler's context carries the level on")
		if c == criticality.Default {
			assert.Empty(t, header, "the default level is not sent")
		} else {
			assert.Equal(t, c.String(), header)
		}
	}
	get(context.Background(), "")
	level, header := app.last()
	assert.Equal(t, criticality.Default, level, "no header: the default level")
	assert.Empty(t, header)

	// A header the caller set is sent as it is when the context names no
	// level, and replaced when it does.
	get(context.Background(), "SHEDDABLE")
	level, _ = app.last()
	assert.Equal(t, criticality.Sheddable, level)
	get(criticality.With(context.Background(), criticality.CriticalPlus), "SHEDDABLE")
	level, header = app.last()
	assert.Equal(t, criticality.CriticalPlus, level)
	assert.Equal(t, "CRITICAL_PLUS", header)
}

func TestHandler_badCriticalityIsTheDefault(t *testing.T) {
	app := &seen{}
	base, _, client := serveHandler(t, app, trusted)
	for _, v := range []string{"bogus", "CRITICAL_PLUS_", "0", "-2", "critical plus", strings.Repeat("S", 4000), "\t", "SHEDDABLE,CRITICAL_PLUS"} {
		req, err := http.NewRequest(http.MethodGet, base, nil)
		require.NoError(t, err)
		req.Header.Set(httpbreaker.CriticalityHeader, v)
		resp, err := client.Do(req)
		require.NoError(t, err, "%q", v)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%q", v)
		level, _ := app.last()
		assert.Equal(t, criticality.Default, level, "%q", v)
	}
	// Two headers: the first counts.
	req, err := http.NewRequest(http.MethodGet, base, nil)
	require.NoError(t, err)
	req.Header.Add(httpbreaker.CriticalityHeader, "sheddable_plus")
	req.Header.Add(httpbreaker.CriticalityHeader, "CRITICAL_PLUS")
	resp, err := client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	level, _ := app.last()
	assert.Equal(t, criticality.SheddablePlus, level, "any case")
}

func TestHandler_shedsTheLowestLevelsFirst(t *testing.T) {
	// The plain formula, whose drop probability the test can work out.
	reg := newRegistry(breaker.WithPlainFormula())
	base := serve(t, httpbreaker.MustNewHandler(&seen{}, httpbreaker.WithBreakers(reg.Get), trusted))
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(client.CloseIdleConnections)

	// The server's breaker has seen 60 % of 400 calls fail, calls without a
	// level: it drops (400 − 5 − 1.5·160)/401 of them, which a SHEDDABLE
	// request, the lowest level, takes whole.
	b := reg.Registry.Get(httpbreaker.DefaultHandlerKey)
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
	s := b.Stats()
	require.InDelta(t, 155.0/401, s.DropProbability, 1e-9)

	status := func(c criticality.Level) (shed int) {
		for range 40 {
			req, err := http.NewRequest(http.MethodGet, base, nil)
			require.NoError(t, err)
			req.Header.Set(httpbreaker.CriticalityHeader, c.String())
			resp, err := client.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				shed++
			}
		}
		return shed
	}
	assert.Equal(t, 40, status(criticality.Sheddable), "SHEDDABLE is shed")
	assert.Equal(t, 0, status(criticality.CriticalPlus), "CRITICAL_PLUS is served")
}

func TestHandler_leveledRequestOfAClientGone(t *testing.T) {
	app := &seen{}
	reg := newRegistry()
	h := httpbreaker.MustNewHandler(app, httpbreaker.WithBreakers(reg.Get), trusted)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	req.Header.Set(httpbreaker.CriticalityHeader, "SHEDDABLE")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, 0, app.handled, "not served")
	assert.Empty(t, rec.Body.String(), "nothing to answer")
	_, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(0), total, "nothing recorded")
}

// A header named by one of these constants is looked up by the name as
// given (AttemptOf, the Transport's checks of a response), where net/http
// stores headers by their canonical names: each must be its canonical
// form.
func TestHeaders_canonical(t *testing.T) {
	for _, h := range []string{httpbreaker.CriticalityHeader, httpbreaker.AttemptHeader,
		httpbreaker.RetryHeader, httpbreaker.OverloadHeader} {
		assert.Equal(t, http.CanonicalHeaderKey(h), h)
	}
}
