package statuspage_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/statuspage"
)

// start is when the tests' clocks start.
var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a registry whose breakers read a mock clock, with the plain
// formula (K 1, no protection) so that a few failures shed at once.
func fixture(t *testing.T) (*clock.Mock, *breaker.Registry) {
	t.Helper()
	m := clock.NewMock()
	m.Set(start)
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)), breaker.WithPlainFormula(),
		breaker.WithK(1), breaker.WithProtection(0))
	return m, r
}

// calls makes ok successful calls then bad failed ones (those admitted)
// through b, the failures with reason.
func calls(t *testing.T, b breaker.Breaker, ok, bad int, reason string) {
	t.Helper()
	for range ok {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Accept()
	}
	for range bad {
		if p, err := b.Allow(); err == nil {
			p.Reject(reason)
		}
	}
}

// get serves a GET of target by h through a server on loopback and returns
// the response, its body read.
func get(t *testing.T, h http.Handler, target string) (*http.Response, string) {
	t.Helper()
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	defer srv.Close()
	return do(t, srv.Client(), http.MethodGet, srv.URL+target)
}

func do(t *testing.T, c *http.Client, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func snapshot(t *testing.T, h http.Handler) statuspage.Snapshot {
	t.Helper()
	resp, body := get(t, h, "/debug/breakers?format=json")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	var s statuspage.Snapshot
	require.NoError(t, json.Unmarshal([]byte(body), &s), body)
	return s
}

func TestPage_ServeHTTP_json(t *testing.T) {
	m, r := fixture(t)
	calls(t, r.Get("payments"), 30, 10, "timeout")
	r.Get("idle")
	r.NoBreakerFor("legacy")
	page := statuspage.MustNew(r, statuspage.WithClock(m))

	s := snapshot(t, page)
	assert.Equal(t, start, s.Time.UTC())
	assert.Equal(t, 2, s.Total, "a breaker without stats (legacy) is left out")
	require.Len(t, s.Breakers, 2)
	assert.Equal(t, "idle", s.Breakers[0].Name, "by name")
	idle, pay := s.Breakers[0], s.Breakers[1]
	assert.Equal(t, statuspage.Breaker{Name: "idle", Reasons: []statuspage.Reason{},
		History: []statuspage.Sample{{At: s.Time, DropProbability: 0}}}, idle)

	want := r.Get("payments").Stats()
	assert.Equal(t, "payments", pay.Name)
	assert.Positive(t, pay.DropProbability)
	assert.InDelta(t, want.DropProbability, pay.DropProbability, 1e-12)
	assert.Equal(t, int64(30), pay.Successes)
	assert.Equal(t, want.Failures, pay.Failures)
	assert.Equal(t, want.Drops, pay.Drops)
	assert.Equal(t, pay.Successes+pay.Failures+pay.Drops, pay.Requests)
	assert.Equal(t, int64(40), pay.TotalRequests)
	assert.Equal(t, want.TotalFailures, pay.TotalFailures)
	require.NotEmpty(t, pay.Reasons)
	assert.Equal(t, "timeout", pay.Reasons[0].Text)
	assert.Equal(t, start, pay.Reasons[0].At.UTC())
	assert.Nil(t, pay.Criticalities, "no call named a level")
	require.Len(t, pay.History, 1)
	assert.InDelta(t, pay.DropProbability, pay.History[0].DropProbability, 1e-12)

	resp, body := get(t, page, "/?format=json")
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.Contains(t, body, `"drop_probability":`)
	assert.Contains(t, body, `"requests_total":40`)
	assert.NotContains(t, body, `"criticalities"`)
}

func TestPage_ServeHTTP_criticalities(t *testing.T) {
	m, r := fixture(t)
	b := r.Get("inventory")
	for i := range 40 {
		ctx := criticality.With(context.Background(), criticality.Sheddable)
		if i%2 == 0 {
			ctx = criticality.With(context.Background(), criticality.CriticalPlus)
		}
		_ = b.DoCtx(ctx, func() error {
			if i >= 20 {
				return io.ErrUnexpectedEOF
			}
			return nil
		})
	}
	s := snapshot(t, statuspage.MustNew(r, statuspage.WithClock(m)))
	require.Len(t, s.Breakers, 1)
	lv := s.Breakers[0].Criticalities
	require.Len(t, lv, 4)
	names := make([]string, len(lv))
	for i, l := range lv {
		names[i] = l.Criticality
	}
	assert.Equal(t, []string{"CRITICAL_PLUS", "CRITICAL", "SHEDDABLE_PLUS", "SHEDDABLE"}, names)
	assert.Equal(t, int64(20), lv[0].Calls)
	assert.Equal(t, int64(20), lv[3].Calls)
	assert.Equal(t, int64(0), lv[1].Calls)
	assert.GreaterOrEqual(t, lv[3].DropProbability, lv[0].DropProbability, "sheddable calls go first")
}

func TestPage_ServeHTTP_historyOneSampleASecondForAMinute(t *testing.T) {
	m, r := fixture(t)
	b := r.Get("payments")
	page := statuspage.MustNew(r, statuspage.WithClock(m))

	// Three requests within one second make one sample, of the last.
	calls(t, b, 10, 0, "")
	snapshot(t, page)
	m.Add(300 * time.Millisecond)
	calls(t, b, 0, 30, "refused")
	snapshot(t, page)
	m.Add(300 * time.Millisecond)
	s := snapshot(t, page)
	require.Len(t, s.Breakers[0].History, 1)
	assert.Equal(t, s.Time, s.Breakers[0].History[0].At)
	assert.Equal(t, s.Breakers[0].DropProbability, s.Breakers[0].History[0].DropProbability)
	assert.Positive(t, s.Breakers[0].DropProbability)

	// One a second: 90 seconds of polls keep the last minute.
	for range 90 {
		m.Add(time.Second)
		s = snapshot(t, page)
	}
	h := s.Breakers[0].History
	require.Len(t, h, 60, "a sample per second of the last minute")
	assert.Equal(t, s.Time.Add(-59*time.Second), h[0].At)
	assert.Equal(t, s.Time, h[59].At)
	for i := 1; i < len(h); i++ {
		assert.Equal(t, time.Second, h[i].At.Sub(h[i-1].At), "sample %d", i)
	}
	assert.Zero(t, h[59].DropProbability, "the failures left the window long ago")

	// Nobody looked for two minutes: nothing was sampled.
	m.Add(2 * time.Minute)
	s = snapshot(t, page)
	require.Len(t, s.Breakers[0].History, 1)
	assert.Equal(t, s.Time, s.Breakers[0].History[0].At)
}

func TestPage_ServeHTTP_historyOfAFailingDependency(t *testing.T) {
	m, r := fixture(t)
	b := r.Get("payments")
	page := statuspage.MustNew(r, statuspage.WithClock(m))
	var want []float64
	for i := range 10 {
		if i < 5 {
			calls(t, b, 20, 0, "") // healthy
		} else {
			calls(t, b, 0, 20, "refused") // failing
		}
		s := b.Stats()
		want = append(want, s.DropProbability)
		snapshot(t, page)
		m.Add(time.Second)
	}
	h := snapshot(t, page).Breakers[0].History
	require.Len(t, h, 11)
	for i, p := range want {
		assert.InDelta(t, p, h[i].DropProbability, 1e-12, "sample %d", i)
		assert.Equal(t, start.Add(time.Duration(i)*time.Second), h[i].At.UTC())
	}
	assert.Zero(t, h[4].DropProbability, "healthy")
	assert.Greater(t, h[6].DropProbability, 0.5, "failing")
}

func TestPage_ServeHTTP_limitShowsTheWorst(t *testing.T) {
	m, r := fixture(t)
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		calls(t, r.Get(name), 20, 0, "")
	}
	calls(t, r.Get("f"), 0, 20, "down")
	calls(t, r.Get("c"), 0, 5, "flaky")
	page := statuspage.MustNew(r, statuspage.WithClock(m), statuspage.WithLimit(3))

	s := snapshot(t, page)
	assert.Equal(t, 7, s.Total)
	var names []string
	for _, b := range s.Breakers {
		names = append(names, b.Name)
	}
	assert.Equal(t, []string{"a", "c", "f"}, names, "the highest drop probabilities, then failures, then names")

	_, body := get(t, page, "/")
	assert.Contains(t, body, `"total":7`)
}

func TestPage_ServeHTTP_names(t *testing.T) {
	m, r := fixture(t)
	long := strings.Repeat("é", 300)
	r.Get(long + "a")
	r.Get(long + "b")
	r.Get("bad\xffutf8")
	s := snapshot(t, statuspage.MustNew(r, statuspage.WithClock(m)))
	require.Len(t, s.Breakers, 3)
	var names []string
	for _, b := range s.Breakers {
		assert.True(t, utf8.ValidString(b.Name), "%q", b.Name)
		assert.LessOrEqual(t, len(b.Name), 210, "cut, a suffix aside")
		names = append(names, b.Name)
	}
	cut := strings.Repeat("é", 98) + "…"
	assert.ElementsMatch(t, []string{`bad\xffutf8`, cut, cut + " (2)"}, names,
		"valid UTF-8, at most 200 bytes, distinct")
}

func TestPage_ServeHTTP_htmlEscapesHostileNamesAndReasons(t *testing.T) {
	m, r := fixture(t)
	name := `</script><script>alert("name")</script><img src=x onerror=alert(1)>&amp;` + "\u2028"
	reason := `<!--<script>alert('reason')</script>--></script>` + "\u2029"
	calls(t, r.Get(name), 0, 3, reason)
	page := statuspage.MustNew(r, statuspage.WithClock(m))

	resp, body := get(t, page, "/debug/breakers")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, 2, strings.Count(body, "<script"), "the data and the page's script")
	assert.Equal(t, 2, strings.Count(body, "</script"))
	for _, s := range []string{"<img", "<!--", "&amp;", "\u2028", "\u2029"} {
		assert.False(t, strings.Contains(body, s), "the page holds %q", s)
	}

	// The data is the snapshot, the hostile text intact once parsed.
	head, data, ok := strings.Cut(body, `<script type="application/json" id="snapshot">`)
	require.True(t, ok)
	data, tail, ok := strings.Cut(data, "</script>")
	require.True(t, ok)
	assert.False(t, strings.ContainsAny(data, "<>&"), "the data holds markup: %s", data)
	var s statuspage.Snapshot
	require.NoError(t, json.Unmarshal([]byte(data), &s))
	require.Len(t, s.Breakers, 1)
	assert.Equal(t, name, s.Breakers[0].Name)
	require.NotEmpty(t, s.Breakers[0].Reasons)
	assert.Equal(t, reason, s.Breakers[0].Reasons[0].Text)

	// The policy allows the inline script and style, and nothing else.
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "connect-src 'self'")
	assert.Contains(t, csp, "'sha256-"+inline(t, tail, "<script>", "</script>")+"'")
	assert.Contains(t, csp, "'sha256-"+inline(t, head, "<style>", "</style>")+"'")
	assert.NotContains(t, csp, "unsafe")
	assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	// The page loads nothing from elsewhere: the one URL it holds is
	// SVG's namespace.
	assert.Equal(t, 1, strings.Count(body, "http"))
	assert.Equal(t, 1, strings.Count(body, "'http://www.w3.org/2000/svg'"))
	assert.False(t, strings.Contains(head+tail, "src="), "the page loads no script or image")
}

// inline returns the hash, base64, of what s holds between open and close.
func inline(t *testing.T, s, open, close string) string {
	t.Helper()
	_, s, ok := strings.Cut(s, open)
	require.True(t, ok, "no %s", open)
	s, _, ok = strings.Cut(s, close)
	require.True(t, ok, "no %s", close)
	sum := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func TestPage_ServeHTTP_methodsAndFormats(t *testing.T) {
	_, r := fixture(t)
	srv := httptest.NewServer(statuspage.MustNew(r))
	defer srv.Close()

	resp, body := do(t, srv.Client(), http.MethodPost, srv.URL+"/")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	assert.Equal(t, "statuspage: method POST not allowed: want GET or HEAD\n", body)

	resp, body = do(t, srv.Client(), http.MethodGet, srv.URL+"/?format=%3Cb%3E")
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "statuspage: format \"<b>\": want json or html\n", body)

	resp, body = do(t, srv.Client(), http.MethodHead, srv.URL+"/")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, body)

	resp, body = do(t, srv.Client(), http.MethodGet, srv.URL+"/any/path?format=html")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "<title>Breakers</title>")
	assert.Contains(t, body, `No breakers yet.`)
}

func TestNew_invalid(t *testing.T) {
	r := breaker.MustNewRegistry()
	for _, tc := range []struct {
		name string
		src  breaker.Source
		opts []statuspage.Option
		want string
	}{
		{"limit 0", r, []statuspage.Option{statuspage.WithLimit(0)},
			"statuspage: invalid option: WithLimit(0): must be between 1 and 10000"},
		{"limit too high", r, []statuspage.Option{statuspage.WithLimit(10001)},
			"statuspage: invalid option: WithLimit(10001): must be between 1 and 10000"},
		{"nil clock", r, []statuspage.Option{statuspage.WithClock(nil)},
			"statuspage: invalid option: WithClock(nil): a clock is required"},
		{"nil option", r, []statuspage.Option{nil}, "statuspage: invalid option: a nil Option was given"},
		{"nil source", nil, nil, "statuspage: invalid option: New(nil): a source of breakers is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := statuspage.New(tc.src, tc.opts...)
			assert.ErrorIs(t, err, statuspage.ErrInvalidOption)
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, p)
			assert.PanicsWithError(t, tc.want, func() { statuspage.MustNew(tc.src, tc.opts...) })
		})
	}
	for _, limit := range []int{1, 10000} { // the ends of WithLimit's documented range
		_, err := statuspage.New(r, statuspage.WithLimit(limit))
		assert.NoError(t, err, "WithLimit(%d)", limit)
	}
}

func TestPage_registersNothingGlobally(t *testing.T) {
	statuspage.MustNew(breaker.DefaultRegistry())
	for _, path := range []string{"/", "/debug/breakers", "/debug/breakers/", "/statuspage"} {
		_, pattern := http.DefaultServeMux.Handler(httptest.NewRequest(http.MethodGet, path, nil))
		assert.Empty(t, pattern, path)
	}
}

func TestPage_ServeHTTP_concurrent(t *testing.T) {
	m, r := fixture(t)
	page := statuspage.MustNew(r, statuspage.WithClock(m), statuspage.WithLimit(5))
	srv := httptest.NewServer(page)
	defer srv.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				b := r.Get(string(rune('a' + (g+i)%10)))
				if p, err := b.Allow(); err == nil {
					if i%3 == 0 {
						p.Reject("x")
					} else {
						p.Accept()
					}
				}
				if i%10 == 0 {
					resp, err := srv.Client().Get(srv.URL + "/?format=json")
					if assert.NoError(t, err) {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						assert.Equal(t, http.StatusOK, resp.StatusCode)
					}
				}
			}
		}()
	}
	for range 5 {
		m.Add(time.Second)
	}
	wg.Wait()
	s := snapshot(t, page)
	assert.Equal(t, 10, s.Total)
	assert.Len(t, s.Breakers, 5)
}
