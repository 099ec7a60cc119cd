package httpbreaker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

func TestCriticalityPolicy_Level(t *testing.T) {
	byRoute := httpbreaker.LevelFunc(func(r *http.Request) criticality.Level {
		if strings.HasPrefix(r.URL.Path, "/prefetch/") {
			return criticality.Sheddable
		}
		return criticality.CriticalPlus
	})
	for _, tc := range []struct {
		name   string
		policy httpbreaker.CriticalityPolicy
		path   string
		header string // "" for none
		want   criticality.Level
	}{
		{"ignore: a claim", httpbreaker.IgnoreHeader(), "/", "CRITICAL_PLUS", criticality.Critical},
		{"ignore: a low claim", httpbreaker.IgnoreHeader(), "/", "SHEDDABLE", criticality.Critical},
		{"zero value ignores", httpbreaker.CriticalityPolicy{}, "/", "CRITICAL_PLUS", criticality.Critical},
		{"trust: CRITICAL_PLUS", httpbreaker.TrustHeader(criticality.CriticalPlus), "/", "CRITICAL_PLUS", criticality.CriticalPlus},
		{"trust: any case", httpbreaker.TrustHeader(criticality.CriticalPlus), "/", "sheddable_plus", criticality.SheddablePlus},
		{"trust: no header", httpbreaker.TrustHeader(criticality.CriticalPlus), "/", "", criticality.Critical},
		{"trust: not a level", httpbreaker.TrustHeader(criticality.CriticalPlus), "/", "URGENT", criticality.Critical},
		{"capped at CRITICAL", httpbreaker.TrustHeader(criticality.Critical), "/", "CRITICAL_PLUS", criticality.Critical},
		{"below the cap", httpbreaker.TrustHeader(criticality.Critical), "/", "SHEDDABLE", criticality.Sheddable},
		{"cap below the default: no header", httpbreaker.TrustHeader(criticality.SheddablePlus), "/", "", criticality.SheddablePlus},
		{"cap below the default: a claim", httpbreaker.TrustHeader(criticality.SheddablePlus), "/", "CRITICAL_PLUS", criticality.SheddablePlus},
		{"cap below the default: lower", httpbreaker.TrustHeader(criticality.SheddablePlus), "/", "SHEDDABLE", criticality.Sheddable},
		{"the server decides: route", byRoute, "/prefetch/a", "CRITICAL_PLUS", criticality.Sheddable},
		{"the server decides: other route", byRoute, "/checkout", "SHEDDABLE", criticality.CriticalPlus},
		{"a func's value that is not a level", httpbreaker.LevelFunc(func(*http.Request) criticality.Level { return 7 }),
			"/", "", criticality.Critical},
		{"an invalid cap, used directly", httpbreaker.TrustHeader(9), "/", "SHEDDABLE", criticality.Critical},
		{"a nil func, used directly", httpbreaker.LevelFunc(nil), "/", "", criticality.Critical},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.header != "" {
				r.Header.Set(httpbreaker.CriticalityHeader, tc.header)
			}
			assert.Equal(t, tc.want, tc.policy.Level(r))
		})
	}
}

func TestWithCriticalityPolicy_invalid(t *testing.T) {
	ok := http.NotFoundHandler()
	for _, tc := range []struct {
		policy httpbreaker.CriticalityPolicy
		want   string
	}{
		{httpbreaker.TrustHeader(5), "httpbreaker: invalid option: WithCriticalityPolicy(TrustHeader(criticality.Level(5))): " +
			"max must be one of the four levels, criticality.CriticalPlus to criticality.Sheddable"},
		{httpbreaker.LevelFunc(nil), "httpbreaker: invalid option: WithCriticalityPolicy(LevelFunc(nil)): function must not be nil"},
	} {
		_, err := httpbreaker.NewHandler(ok, httpbreaker.WithCriticalityPolicy(tc.policy))
		assert.ErrorIs(t, err, httpbreaker.ErrInvalidOption)
		assert.EqualError(t, err, tc.want)
	}
	for _, p := range []httpbreaker.CriticalityPolicy{httpbreaker.IgnoreHeader(), httpbreaker.TrustHeader(criticality.Sheddable),
		httpbreaker.LevelFunc(func(*http.Request) criticality.Level { return criticality.Critical })} {
		_, err := httpbreaker.NewHandler(ok, httpbreaker.WithCriticalityPolicy(p))
		assert.NoError(t, err, "%v", p)
	}
	assert.Equal(t, "TrustHeader(criticality.SheddablePlus)", httpbreaker.TrustHeader(criticality.SheddablePlus).String())
	assert.Equal(t, "IgnoreHeader()", httpbreaker.IgnoreHeader().String())
}

// probe sends n requests one after the other to a Handler with opts in
// front of a handler that fails 9 calls in 10; the odd ones have the
// CriticalityHeader set to claim (none if empty), the even ones none. It
// returns their statuses. Each probe has a server and a registry of its
// own, whose breakers read a mock clock and a source seeded alike, so that
// two probes whose requests the Handler treats alike answer alike.
func probe(t *testing.T, n int, claim string, opts ...httpbreaker.HandlerOption) []int {
	t.Helper()
	var calls atomic.Int64
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%10 != 0 {
			http.Error(w, "overloaded", http.StatusInternalServerError)
		}
	})
	base, _, client := serveHandler(t, failing, opts...)
	statuses := make([]int, n)
	for i := range statuses {
		req, err := http.NewRequest(http.MethodGet, base, nil)
		require.NoError(t, err)
		if claim != "" && i%2 == 1 {
			req.Header.Set(httpbreaker.CriticalityHeader, claim)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		statuses[i] = resp.StatusCode
	}
	return statuses
}

// served counts the statuses that are not 503, of the even requests
// (plain) and of the odd ones (claiming).
func served(statuses []int) (plain, claiming int) {
	for i, s := range statuses {
		if s != http.StatusServiceUnavailable {
			if i%2 == 0 {
				plain++
			} else {
				claiming++
			}
		}
	}
	return plain, claiming
}

// Any client could jump the queue: against a handler failing 90 % of its
// calls, 10,000 requests claiming CRITICAL_PLUS were served 1,498 times and
// 10,000 plain ones 3 times (issue 22).
func TestHandler_untrustedClaimIsServedAsPlain(t *testing.T) {
	const n = 1000 // half plain, half claiming
	allPlain := probe(t, n, "")
	for _, tc := range []struct {
		name string
		opts []httpbreaker.HandlerOption
	}{
		{"default", nil},
		{"IgnoreHeader", []httpbreaker.HandlerOption{httpbreaker.WithCriticalityPolicy(httpbreaker.IgnoreHeader())}},
		{"capped at CRITICAL", []httpbreaker.HandlerOption{httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.Critical))}},
	} {
		mixed := probe(t, n, "CRITICAL_PLUS", tc.opts...)
		plain, claiming := served(mixed)
		t.Logf("%s: %d plain requests served %d times, %d claiming CRITICAL_PLUS %d times", tc.name, n/2, plain, n/2, claiming)
		assert.Equal(t, allPlain, mixed, "%s: each request is answered as it is when none claims a level", tc.name)
		assert.InDelta(t, plain, claiming, 0.02*n/2+10, "%s: the same share served", tc.name)
	}
	// The probe tells: where the header is trusted, the claim is served
	// far more often than plain requests.
	plain, claiming := served(probe(t, n, "CRITICAL_PLUS",
		httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus))))
	t.Logf("trusted: %d plain requests served %d times, %d claiming CRITICAL_PLUS %d times", n/2, plain, n/2, claiming)
	assert.Greater(t, claiming, 3*plain+10, "a trusted CRITICAL_PLUS goes first")
}

// levelApp answers with the level in its request's context and the
// CriticalityHeader it got.
type levelApp struct{ level, header atomic.Value }

func (a *levelApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.level.Store(criticality.From(r.Context()))
	a.header.Store(r.Header.Get(httpbreaker.CriticalityHeader))
}

func (a *levelApp) last() (criticality.Level, string) {
	return a.level.Load().(criticality.Level), a.header.Load().(string)
}

func TestHandler_trustedHopCarriesTheLevel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		front  httpbreaker.CriticalityPolicy
		claim  criticality.Level
		want   criticality.Level
		header string
	}{
		{"trusted", httpbreaker.TrustHeader(criticality.CriticalPlus), criticality.CriticalPlus, criticality.CriticalPlus, "CRITICAL_PLUS"},
		{"trusted, low", httpbreaker.TrustHeader(criticality.CriticalPlus), criticality.Sheddable, criticality.Sheddable, "SHEDDABLE"},
		{"capped", httpbreaker.TrustHeader(criticality.Critical), criticality.CriticalPlus, criticality.Critical, ""},
		{"untrusted", httpbreaker.IgnoreHeader(), criticality.CriticalPlus, criticality.Critical, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// client → front (tc.front) → back (trusts the header): the
			// front's handler calls the back through a Transport, with its
			// request's context.
			back := &levelApp{}
			backURL, _, _ := serveHandler(t, back, httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus)))
			hop := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(breaker.MustNewRegistry()))}
			t.Cleanup(hop.CloseIdleConnections)
			front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, backURL, nil)
				if err == nil {
					var resp *http.Response
					if resp, err = hop.Do(req); err == nil {
						err = resp.Body.Close()
					}
				}
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
				}
			})
			frontURL, _, _ := serveHandler(t, front, httpbreaker.WithCriticalityPolicy(tc.front))

			client := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(breaker.MustNewRegistry()))}
			t.Cleanup(client.CloseIdleConnections)
			req, err := http.NewRequestWithContext(criticality.With(context.Background(), tc.claim), http.MethodGet, frontURL, nil)
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			level, header := back.last()
			assert.Equal(t, tc.want, level, "the level the next hop serves at")
			assert.Equal(t, tc.header, header)
		})
	}
}

func TestHandler_claimNotBelievedIsNotForwarded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		front  httpbreaker.CriticalityPolicy
		claim  string
		header string // what the back gets
	}{
		{"untrusted", httpbreaker.IgnoreHeader(), "CRITICAL_PLUS", ""},
		{"untrusted, low", httpbreaker.IgnoreHeader(), "SHEDDABLE", ""},
		{"capped", httpbreaker.TrustHeader(criticality.Critical), "CRITICAL_PLUS", ""},
		{"capped below the default", httpbreaker.TrustHeader(criticality.SheddablePlus), "CRITICAL_PLUS", "SHEDDABLE_PLUS"},
		{"trusted, in its own spelling", httpbreaker.TrustHeader(criticality.CriticalPlus), "critical_plus", "CRITICAL_PLUS"},
		{"trusted, low", httpbreaker.TrustHeader(criticality.Critical), "SHEDDABLE", "SHEDDABLE"},
		{"not a level", httpbreaker.TrustHeader(criticality.CriticalPlus), "URGENT", ""},
		{"the server decides", httpbreaker.LevelFunc(func(*http.Request) criticality.Level { return criticality.SheddablePlus }),
			"CRITICAL_PLUS", "SHEDDABLE_PLUS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A reverse proxy copies the request's headers to the back,
			// which trusts them, through a plain transport.
			back := &levelApp{}
			backURL, _, _ := serveHandler(t, back, httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus)))
			u, err := url.Parse(backURL)
			require.NoError(t, err)
			proxy := httputil.NewSingleHostReverseProxy(u)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(tr.CloseIdleConnections)
			proxy.Transport = tr
			frontURL, _, client := serveHandler(t, proxy, httpbreaker.WithCriticalityPolicy(tc.front))

			req, err := http.NewRequest(http.MethodGet, frontURL, nil)
			require.NoError(t, err)
			req.Header.Set(httpbreaker.CriticalityHeader, tc.claim)
			resp, err := client.Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			_, header := back.last()
			assert.Equal(t, tc.header, header)
		})
	}
}

func TestHandler_leavesTheCallersRequestAlone(t *testing.T) {
	app := &levelApp{}
	h := httpbreaker.MustNewHandler(app, httpbreaker.WithRegistry(breaker.MustNewRegistry()))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(httpbreaker.CriticalityHeader, "CRITICAL_PLUS")
	h.ServeHTTP(httptest.NewRecorder(), req)
	level, header := app.last()
	assert.Equal(t, criticality.Critical, level)
	assert.Empty(t, header, "the handler does not get the claim")
	assert.Equal(t, "CRITICAL_PLUS", req.Header.Get(httpbreaker.CriticalityHeader), "the request given is unchanged")

	plain := httptest.NewRequest(http.MethodGet, "/", nil)
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() {
		_ = httpbreaker.IgnoreHeader().Level(plain)
		_ = httpbreaker.TrustHeader(criticality.CriticalPlus).Level(plain)
	}))
}

// headerSink keeps a header copied in a test, as the Handler keeps its.
var headerSink http.Header

// A request served at the default level costs the Handler one allocation,
// its writer, which holds the request's context and its copy of the
// request too; one claiming another level the policy believes, none
// more: that context carries the level; one claiming the default level,
// none more: its claim says the level served, and is passed on as it is; one
// claiming what is no level, the copy of its header without the claim,
// and no second copy of the request.
func TestHandler_allocatesOncePerRequest(t *testing.T) {
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		httpbreaker.WithRegistry(breaker.MustNewRegistry()),
		httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus)))
	w := &benchWriter{h: http.Header{}}
	plain := httptest.NewRequest(http.MethodGet, "/", nil)
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { h.ServeHTTP(w, plain) }))
	claimed := httptest.NewRequest(http.MethodGet, "/", nil)
	claimed.Header.Set(httpbreaker.CriticalityHeader, "SHEDDABLE")
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { h.ServeHTTP(w, claimed) }))
	claimedDefault := httptest.NewRequest(http.MethodGet, "/", nil)
	claimedDefault.Header.Set(httpbreaker.CriticalityHeader, "CRITICAL")
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { h.ServeHTTP(w, claimedDefault) }))
	claimedNothing := httptest.NewRequest(http.MethodGet, "/", nil)
	claimedNothing.Header.Set(httpbreaker.CriticalityHeader, "URGENT")
	clone := testing.AllocsPerRun(100, func() { headerSink = claimedNothing.Header.Clone() })
	assert.Equal(t, 1+clone, testing.AllocsPerRun(100, func() { h.ServeHTTP(w, claimedNothing) }))
}
