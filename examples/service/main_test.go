package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/statuspage"
)

// syncBuffer is a bytes.Buffer the servers' goroutines may log to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixture is a service on loopback whose inventory is a server of the
// test's that fails while down is set, and pricing one that fails while
// pricingDown is, on a mock clock.
type fixture struct {
	t           *testing.T
	s           *service
	mock        *clock.Mock
	down        atomic.Bool
	pricingDown atomic.Bool
	logs        *syncBuffer

	inventoryCalls atomic.Int64
}

func newFixture(t *testing.T) *fixture { return newFixtureFailing(t, faultError) }

// newFixtureFailing is newFixture, whose inventory fails as fault says
// while down; it counts the calls the inventory gets in inventoryCalls.
func newFixtureFailing(t *testing.T, fault string) *fixture {
	f := &fixture{t: t, mock: clock.NewMock(), logs: &syncBuffer{}}
	f.mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	dep := dependency("inventory", "42", f.down.Load, fault)
	inventory := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.inventoryCalls.Add(1)
		dep.ServeHTTP(w, r)
	}))
	t.Cleanup(inventory.Close)
	pricing := httptest.NewServer(dependency("pricing", "9.99", f.pricingDown.Load, faultError))
	t.Cleanup(pricing.Close)

	cfg := defaultConfig()
	cfg.addr, cfg.ops = "127.0.0.1:0", "127.0.0.1:0"
	cfg.inventory, cfg.pricing = inventory.URL, pricing.URL
	cfg.rate = 0
	cfg.work = 0 // the mock clock would hold every checkout
	cfg.clock = f.mock
	cfg.proba = proba.NewSeeded(1)
	cfg.logger = slog.New(slog.NewTextHandler(f.logs, nil))
	s, err := start(cfg)
	require.NoError(t, err)
	t.Cleanup(s.close)
	f.s = s
	return f
}

// checkouts sends n checkouts at level ("" for none) and counts the
// answers by status code.
func (f *fixture) checkouts(n int, level string) map[int]int {
	codes := map[int]int{}
	for range n {
		req, err := http.NewRequest(http.MethodGet, f.s.checkoutURL, nil)
		require.NoError(f.t, err)
		if level != "" {
			req.Header.Set(httpbreaker.CriticalityHeader, level)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(f.t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	return codes
}

// do sends method to u and returns the status and the body.
func do(t *testing.T, method, u string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// metrics scrapes /metrics and returns its samples by
// `name{label="value",...}` as Prometheus writes a series (labels sorted).
func (f *fixture) metrics() map[string]float64 {
	code, body := do(f.t, http.MethodGet, f.s.metricsURL)
	require.Equal(f.t, http.StatusOK, code)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(f.t, err)
	samples := map[string]float64{}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetGauge().GetValue()
			if c := m.GetCounter(); c != nil {
				v = c.GetValue()
			}
			samples[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return samples
}

// page returns the status page's data.
func (f *fixture) page() map[string]statuspage.Breaker {
	code, body := do(f.t, http.MethodGet, f.s.statusURL+"?format=json")
	require.Equal(f.t, http.StatusOK, code)
	var snap statuspage.Snapshot
	require.NoError(f.t, json.Unmarshal([]byte(body), &snap))
	byName := map[string]statuspage.Breaker{}
	for _, b := range snap.Breakers {
		byName[b.Name] = b
	}
	return byName
}

func TestService_outageAsAnOperatorSeesIt(t *testing.T) {
	f := newFixture(t)

	assert.Equal(t, map[int]int{200: 20}, f.checkouts(20, ""), "healthy")
	m := f.metrics()
	assert.Equal(t, 20.0, m[`srebreaker_successes_total{breaker="inventory"}`])
	assert.Equal(t, 20.0, m[`srebreaker_successes_total{breaker="pricing"}`])
	assert.Equal(t, 20.0, m[`srebreaker_successes_total{breaker="server:GET /checkout"}`])

	// The inventory fails: its breaker sheds, the SHEDDABLE checkouts
	// first. The route's breaker counts the checkouts that fail for want
	// of it as neither, and sheds nothing: the breaker nearest the failure
	// throttles it, and the route's answers carry the advice that tells
	// the breakers of the route's own callers so. The clock moves on
	// between rounds: a breaker looks for a change of shedding once a
	// bucket.
	f.down.Store(true)
	codes := map[int]int{}
	for range 10 {
		for _, level := range []string{"SHEDDABLE", ""} {
			for k, v := range f.checkouts(10, level) {
				codes[k] += v
			}
		}
		f.mock.Add(100 * time.Millisecond) // a bucket: the window still holds the outage
	}
	assert.Equal(t, 200, codes[502]+codes[503], "no checkout without the inventory: %v", codes)
	assert.Greater(t, codes[503], 100, "most shed by the inventory's breaker: %v", codes)
	resp, err := http.Get(f.s.checkoutURL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "later", resp.Header.Get(httpbreaker.RetryHeader), "a checkout that fails for the inventory says so")

	m = f.metrics()
	assert.Greater(t, m[`srebreaker_drop_probability{breaker="inventory"}`], 0.5)
	assert.Greater(t, m[`srebreaker_drops_total{breaker="inventory"}`], 100.0)
	assert.Zero(t, m[`srebreaker_drop_probability{breaker="server:GET /checkout"}`], "the route's breaker sheds nothing")
	assert.Zero(t, m[`srebreaker_drops_total{breaker="server:GET /checkout"}`])
	require.Contains(t, m, `srebreaker_failures_total{breaker="server:GET /checkout"}`)
	assert.Zero(t, m[`srebreaker_failures_total{breaker="server:GET /checkout"}`], "the checkouts failed for the inventory")
	assert.Equal(t, 0.0, m[`srebreaker_drop_probability{breaker="pricing"}`], "pricing is healthy")
	assert.Greater(t, m[`srebreaker_drops_by_criticality_total{breaker="inventory",criticality="SHEDDABLE"}`], 0.0,
		"the level the header named is the route's, and the Transport passed it on to the inventory's")

	page := f.page()
	require.Contains(t, page, "inventory")
	assert.Greater(t, page["inventory"].DropProbability, 0.5)
	require.NotEmpty(t, page["inventory"].Reasons)
	assert.Contains(t, page["inventory"].Reasons[0].Text, "503")
	assert.Zero(t, page["pricing"].DropProbability)

	logs := f.logs.String()
	assert.Contains(t, logs, `level=WARN msg="breaker started shedding" breaker=inventory drop_probability=`)
	assert.Equal(t, 1, strings.Count(logs, "started shedding"), "the log names the inventory, once:\n%s", logs)
	assert.NotContains(t, logs, `breaker="server:GET /checkout"`)
	assert.NotContains(t, logs, "breaker=pricing")

	// An operator takes the inventory out by hand, then gives it back.
	code, body := do(t, http.MethodPost, f.s.adminURL+"?breaker=inventory&mode=shed_all&ttl=30m&reason=failover&by=alice")
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "override shed_all of inventory set for 30m0s\n", body)
	assert.Equal(t, 1.0, f.metrics()[`srebreaker_override{breaker="inventory",mode="shed_all"}`])
	require.NotNil(t, f.page()["inventory"].Override)
	assert.Equal(t, "failover", f.page()["inventory"].Override.Reason)
	code, body = do(t, http.MethodGet, f.s.adminURL)
	require.Equal(t, http.StatusOK, code)
	var list []overrideView
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list, 1)
	assert.Equal(t, overrideView{Breaker: "inventory", Mode: "shed_all", Reason: "failover", By: "alice",
		SetAt: f.mock.Now(), Expires: f.mock.Now().Add(30 * time.Minute)}, list[0])
	assert.Contains(t, f.logs.String(), `level=WARN msg="breaker override set" breaker=inventory mode=shed_all reason=failover by=alice`)
	assert.Contains(t, f.logs.String(), `level=INFO msg="admin set an override" breaker=inventory mode=shed_all ttl=30m0s remote=127.0.0.1:`)

	code, _ = do(t, http.MethodDelete, f.s.adminURL+"?breaker=inventory")
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, f.metrics(), `srebreaker_override{breaker="inventory",mode="shed_all"}`)
	assert.Contains(t, f.logs.String(), `level=INFO msg="breaker override cleared" breaker=inventory mode=shed_all`)

	// The inventory heals: once the failures have left the window, the
	// checkouts go through, and after a whole window without drops the
	// breakers say they stopped shedding.
	f.down.Store(false)
	f.mock.Add(breaker.DefaultWindow + time.Second)
	assert.Equal(t, map[int]int{200: 50}, f.checkouts(50, ""))
	f.mock.Add(breaker.DefaultWindow + time.Second)
	assert.Equal(t, map[int]int{200: 1}, f.checkouts(1, ""))
	m = f.metrics()
	assert.Zero(t, m[`srebreaker_drop_probability{breaker="inventory"}`])
	assert.Zero(t, m[`srebreaker_drop_probability{breaker="server:GET /checkout"}`])
	assert.Contains(t, f.logs.String(), `level=INFO msg="breaker stopped shedding" breaker=inventory`)
	assert.Equal(t, 1, strings.Count(f.logs.String(), "stopped shedding"), "once, for the inventory")
}

// With pricing down, a checkout, which can do without it, answers with a
// stale price: pricing's breaker sheds, the route's counts successes.
func TestService_pricingDownKeepsTheCheckoutsAnswering(t *testing.T) {
	f := newFixture(t)
	f.pricingDown.Store(true)
	for range 5 {
		code, body := do(t, http.MethodGet, f.s.checkoutURL)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "in stock: 42, price: 9.99 (stale)\n", body)
		f.checkouts(9, "")
		f.mock.Add(100 * time.Millisecond)
	}
	m := f.metrics()
	assert.Greater(t, m[`srebreaker_drop_probability{breaker="pricing"}`], 0.5)
	assert.Zero(t, m[`srebreaker_drop_probability{breaker="server:GET /checkout"}`])
	assert.Equal(t, 50.0, m[`srebreaker_successes_total{breaker="server:GET /checkout"}`])
	assert.Zero(t, m[`srebreaker_failures_total{breaker="server:GET /checkout"}`])
	assert.Equal(t, 50.0, m[`srebreaker_successes_total{breaker="inventory"}`])
}

// An inventory that hangs is shed by the inventory's breaker alone: the
// checkouts waiting on it are not out for the route's breaker, which
// counts no failure and sheds nothing.
func TestService_hangingInventoryAsAnOperatorSeesIt(t *testing.T) {
	f := newFixtureFailing(t, faultHang)
	for range 50 { // healthy for 2.5 s: the breakers learn how long a call takes
		assert.Equal(t, map[int]int{200: 1}, f.checkouts(1, ""))
		f.mock.Add(50 * time.Millisecond)
	}
	f.mock.Add(3 * time.Second) // the window forgets the calls, not what they taught

	f.down.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answers := make(chan int, 40)
	checkout := func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.s.checkoutURL, nil)
		if err != nil {
			answers <- 0
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answers <- 0 // canceled below
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answers <- resp.StatusCode
	}
	for range 20 {
		go checkout()
	}
	require.Eventually(t, func() bool { return f.inventoryCalls.Load() == 70 }, 10*time.Second, time.Millisecond,
		"the checkouts reach the inventory, which hangs")
	for range 10 {
		f.mock.Add(100 * time.Millisecond) // a bucket: the breakers look at the calls out
		f.metrics()
	}
	m := f.metrics()
	assert.Equal(t, 20.0, m[`srebreaker_failures_total{breaker="inventory"}`], "the inventory's breaker counts the calls out")
	assert.Zero(t, m[`srebreaker_failures_total{breaker="server:GET /checkout"}`],
		"the route's does not: its checkouts wait on the inventory")

	// New checkouts are shed by the inventory's breaker; the route admits them.
	for range 20 {
		go checkout()
	}
	require.Eventually(t, func() bool {
		m := f.metrics()
		return m[`srebreaker_drops_total{breaker="inventory"}`]+float64(f.inventoryCalls.Load()-70) == 20
	}, 10*time.Second, time.Millisecond, "each new checkout is shed by the inventory's breaker, or waits on it")
	m = f.metrics()
	assert.Greater(t, m[`srebreaker_drops_total{breaker="inventory"}`], 15.0, "most are shed")
	cancel()
	for range 40 {
		<-answers
	}
	m = f.metrics()
	assert.Zero(t, m[`srebreaker_failures_total{breaker="server:GET /checkout"}`])
	assert.Zero(t, m[`srebreaker_drops_total{breaker="server:GET /checkout"}`], "the route's breaker sheds nothing")
	logs := f.logs.String()
	assert.Contains(t, logs, `level=WARN msg="breaker started shedding" breaker=inventory drop_probability=`)
	assert.Equal(t, 1, strings.Count(logs, "started shedding"), "the log names the inventory, once:\n%s", logs)
	assert.NotContains(t, logs, `breaker="server:GET /checkout"`)
}

func TestAdmin_refusesWhatIsNotALocalAdmin(t *testing.T) {
	f := newFixture(t)
	f.checkouts(1, "") // makes the breakers
	a := newAdmin(f.s.breakers, slog.New(slog.DiscardHandler))
	serve := func(r *http.Request) (int, string) {
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}

	r := httptest.NewRequest(http.MethodPost, "/admin/override?breaker=inventory&mode=shed_all&ttl=1m", nil)
	r.RemoteAddr = "192.0.2.7:51000"
	code, body := serve(r)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, "admin: only from this machine, not from 192.0.2.7:51000\n", body)

	r = httptest.NewRequest(http.MethodPost, "/admin/override?breaker=inventory&mode=shed_all&ttl=1m", nil)
	r.RemoteAddr = "127.0.0.1:51000"
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	code, _ = serve(r)
	assert.Equal(t, http.StatusForbidden, code, "a browser's request from another site")

	r = httptest.NewRequest(http.MethodGet, "/admin/override", nil)
	r.RemoteAddr = "[::1]:51000"
	code, body = serve(r)
	assert.Equal(t, http.StatusOK, code, "IPv6 loopback")
	assert.Equal(t, "[]\n", body)

	_, ok := f.s.breakers.Get("inventory").Override()
	assert.False(t, ok, "nothing refused was set")
}

func TestAdmin_badRequests(t *testing.T) {
	f := newFixture(t)
	f.checkouts(1, "")
	for _, tc := range []struct {
		name, method, query string
		code                int
		body                string
	}{
		{"unknown breaker", http.MethodPost, "breaker=invntory&mode=shed_all&ttl=1m", 404, `admin: no breaker named "invntory"` + "\n"},
		{"no mode", http.MethodPost, "breaker=inventory&ttl=1m", 400, `admin: mode "": must be shed_all or shed_none` + "\n"},
		{"no ttl", http.MethodPost, "breaker=inventory&mode=shed_none", 400, "admin: ttl is missing: say how long the override lasts (30m, 2h), at most 24h\n"},
		{"bad ttl", http.MethodPost, "breaker=inventory&mode=shed_none&ttl=soon", 400, `admin: ttl "soon": time: invalid duration "soon"` + "\n"},
		{"ttl too long", http.MethodPost, "breaker=inventory&mode=shed_none&ttl=48h", 400, "TTL"},
		{"method", http.MethodPut, "breaker=inventory", 405, "admin: PUT is not allowed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, tc.method, f.s.adminURL+"?"+tc.query)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, body, tc.body)
		})
	}
	_, ok := f.s.breakers.Get("inventory").Override()
	assert.False(t, ok)
	assert.NotContains(t, f.metrics(), `srebreaker_requests_total{breaker="invntory"}`, "a typo makes no breaker")
}

func TestRun_printsWhereToLook(t *testing.T) {
	cfg := defaultConfig()
	cfg.addr, cfg.ops, cfg.rate = "127.0.0.1:0", "127.0.0.1:0", 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // run prints, then returns at once
	var out bytes.Buffer
	require.NoError(t, run(ctx, cfg, &out))
	for _, want := range []string{"checkout:  http://127.0.0.1:", "metrics:   http://127.0.0.1:",
		"status:    http://127.0.0.1:", "admin:     http://127.0.0.1:", "curl -X POST 'http://127.0.0.1:",
		"inventory: http://127.0.0.1:", "(up 30s, then down 30s, over and over)", "pricing:   http://127.0.0.1:"} {
		assert.Contains(t, out.String(), want)
	}
}

func TestStart_loadGeneratorReachesTheBreakers(t *testing.T) {
	cfg := defaultConfig()
	cfg.addr, cfg.ops, cfg.rate, cfg.down = "127.0.0.1:0", "127.0.0.1:0", 200, 0
	s, err := start(cfg)
	require.NoError(t, err)
	defer s.close()
	f := &fixture{t: t, s: s}
	require.Eventually(t, func() bool {
		m := f.metrics()
		return m[`srebreaker_successes_total{breaker="inventory"}`] > 0 &&
			m[`srebreaker_requests_by_criticality_total{breaker="server:GET /checkout",criticality="SHEDDABLE"}`] > 0
	}, 10*time.Second, 20*time.Millisecond, "the generated checkouts, some SHEDDABLE, reach the route and the inventory")
}

func TestConfig_validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config)
		want string
	}{
		{"rate", func(c *config) { c.rate = -1 }, "-rate -1: must be between 0 and 10000"},
		{"rate NaN", func(c *config) { c.rate = nan() }, "-rate NaN: must be between 0 and 10000"},
		{"sheddable", func(c *config) { c.sheddable = 1.5 }, "-sheddable 1.5: must be between 0 and 1"},
		{"healthy", func(c *config) { c.healthy = 0 }, "-healthy 0s: must be positive"},
		{"down", func(c *config) { c.down = -time.Second }, "-down -1s: must not be negative"},
		{"fault", func(c *config) { c.fault = "slow" }, `-fault "slow": must be "error" or "hang"`},
		{"inventory", func(c *config) { c.inventory = "localhost:80" }, `-inventory "localhost:80": must be an http or https URL with a host`},
		{"pricing", func(c *config) { c.pricing = "http://" }, `-pricing "http://": must be an http or https URL with a host`},
		{"workers", func(c *config) { c.workers = 0 }, "-workers 0: must be between 1 and 10000"},
		{"work", func(c *config) { c.work = -time.Millisecond }, "-work -1ms: must be between 0s and 10s"},
		{"work too long", func(c *config) { c.work = time.Minute }, "-work 1m0s: must be between 0s and 10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultConfig()
			tc.edit(&cfg)
			_, err := start(cfg)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func nan() float64 {
	var zero float64
	return zero / zero
}

// The doc comment's list of flags and docs/guide/production.md name every
// flag, with its default.
func TestFlags_documented(t *testing.T) {
	fs := flag.NewFlagSet("service", flag.ContinueOnError)
	cfg := defaultConfig()
	setFlags(fs, &cfg)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	guide, err := os.ReadFile("../../docs/guide/production.md")
	require.NoError(t, err)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		line := regexp.MustCompile(`(?m)^//\t-` + f.Name + ` +.*$`).FindString(string(src))
		if assert.NotEmpty(t, line, "-%s in the doc comment's list", f.Name) && f.DefValue != "" {
			assert.Contains(t, line, "default "+f.DefValue, "-%s's default", f.Name)
		}
		assert.True(t, strings.Contains(string(guide), "`-"+f.Name+"`"), "-%s in docs/guide/production.md", f.Name)
	})
	assert.Equal(t, 12, n)
}
