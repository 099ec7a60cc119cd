package retrytest

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/retry"
)

// dependency is a server that is down (every call fails) or fails a share
// of its calls at random, from a seeded source, and counts what reaches it
// while the scenario measures.
type dependency struct {
	down      atomic.Bool
	measuring atomic.Bool
	failShare float64

	mu  sync.Mutex
	rng *rand.Rand // guarded by mu

	reached       atomic.Int64 // calls that reached it
	firstFailures atomic.Int64 // first attempts it failed
}

func newDependency(failShare float64) *dependency {
	return &dependency{failShare: failShare, rng: rand.New(rand.NewPCG(3, 4))}
}

// fails decides whether the call that reached the dependency fails, and
// counts it.
func (d *dependency) fails(attempt int) bool {
	measuring := d.measuring.Load()
	if measuring {
		d.reached.Add(1)
	}
	if d.down.Load() {
		return true
	}
	d.mu.Lock()
	fail := d.rng.Float64() < d.failShare
	d.mu.Unlock()
	if fail && measuring && attempt == 1 {
		d.firstFailures.Add(1)
	}
	return fail
}

func (d *dependency) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.fails(httpbreaker.AttemptOf(r)) {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

// serveHTTP runs h on 127.0.0.1 until the test ends and returns its URL.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// httpCaller makes one call to url, with its retries, through tr.
type httpCaller func(t *testing.T, url string, tr http.RoundTripper, c *virtualClock) func() error

// dropWatch counts the attempts that follow a drop of the breaker within
// one call: retries of a drop. Calls are made one at a time; newCall marks
// where one begins.
type dropWatch struct {
	dropped      bool // the call's last attempt was a drop
	afterDrop    int64
	measuring    bool
	roundTripper http.RoundTripper
}

func (w *dropWatch) newCall(measuring bool) { w.dropped, w.measuring = false, measuring }

// saw notes an attempt that ended with err.
func (w *dropWatch) saw(err error) {
	if w.dropped && w.measuring {
		w.afterDrop++
	}
	w.dropped = errors.Is(err, breaker.ErrServiceUnavailable)
}

func (w *dropWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.roundTripper.RoundTrip(req)
	w.saw(err)
	return resp, err
}

func plainHTTP(_ *testing.T, url string, tr http.RoundTripper, _ *virtualClock) func() error {
	client := &http.Client{Transport: tr}
	return func() error { return getOnce(client, context.Background(), url) }
}

func policyHTTP(_ *testing.T, url string, tr http.RoundTripper, c *virtualClock) func() error {
	client := &http.Client{Transport: tr}
	p := retry.MustNew(retry.WithClock(c), retry.WithRand(rand.NewPCG(5, 6)))
	return func() error {
		return p.Do(context.Background(), nil, func(ctx context.Context) error { return getOnce(client, ctx, url) })
	}
}

// getOnce gets url and returns the response's ResponseError.
func getOnce(client *http.Client, ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return httpbreaker.ResponseError(resp)
}

// retryableHTTP returns a caller through go-retryablehttp with retryMax
// retries, without backoff (virtual time), and with the library's
// CheckRetry and PrepareRetry when ours is set; retryablehttp's defaults
// otherwise.
func retryableHTTP(retryMax int, ours bool) httpCaller {
	return func(_ *testing.T, url string, tr http.RoundTripper, _ *virtualClock) func() error {
		rc := retryablehttp.NewClient()
		rc.HTTPClient = &http.Client{Transport: tr}
		rc.Logger = nil
		rc.RetryMax = retryMax
		rc.Backoff = func(time.Duration, time.Duration, int, *http.Response) time.Duration { return 0 }
		if ours {
			rc.CheckRetry = httpbreaker.CheckRetry
			rc.PrepareRetry = httpbreaker.PrepareRetry
		}
		return func() error {
			resp, err := rc.Get(url)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return httpbreaker.ResponseError(resp)
		}
	}
}

// outcome is what a scenario measured.
type outcome struct {
	reached       int64 // calls that reached the dependency while measuring
	calls         int64 // calls made while measuring
	failed        int64 // calls that ended in an error while measuring
	dropped       int64 // of them, drops of the client's breaker
	firstFailures int64 // first attempts the dependency failed
	dropsRetried  int64 // attempts made after a drop of the breaker, in the same call
}

// httpScenario runs caller against a dependency that is down (or fails
// failShare of its calls when failShare > 0) for measured, after a
// healthy warm-up.
func httpScenario(t *testing.T, caller httpCaller, failShare float64, measured time.Duration) outcome {
	t.Helper()
	d := newDependency(0)
	url := serveHTTP(t, d)
	c := newVirtualClock()
	reg := breaker.MustNewRegistry(breaker.WithClock(c), breaker.WithProba(proba.NewSeeded(1)))
	w := &dropWatch{roundTripper: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(reg))}
	call := caller(t, url, w, c)
	var o outcome
	run(c, warmUp, measured, func(measuring bool) {
		w.newCall(measuring)
		if measuring && !d.measuring.Load() {
			d.measuring.Store(true)
			d.failShare = failShare
			d.down.Store(failShare == 0)
		}
		err := call()
		if !measuring {
			require.NoError(t, err, "the warm-up is healthy")
			return
		}
		o.calls++
		if err != nil {
			o.failed++
			if errors.Is(err, breaker.ErrServiceUnavailable) {
				o.dropped++
			}
		}
	})
	o.reached, o.firstFailures, o.dropsRetried = d.reached.Load(), d.firstFailures.Load(), w.afterDrop
	return o
}

// TestHTTP_outage_retriesDoNotFeedIt: the dependency is down for 20 s at
// 200 calls/s; a caller retrying with at most 3 attempts, through the
// library or through go-retryablehttp with the library's CheckRetry,
// sends it at most 1.1× the calls of a caller that never retries: 1.11×
// asserted, as the retries of the outage's first moments (11 calls) are a
// larger share of the 106 of no retries since the breaker sheds that
// first half second harder (10 of 126 before).
// retryablehttp's defaults are the trap docs/guide/retries.md states.
func TestHTTP_outage_retriesDoNotFeedIt(t *testing.T) {
	base := httpScenario(t, plainHTTP, 0, outage)
	t.Logf("HTTP, dependency down %v at %d calls/s: no retries: %d calls reached it (of %d made)",
		outage, rate, base.reached, base.calls)
	require.Positive(t, base.reached)
	for _, tc := range []struct {
		name   string
		caller httpCaller
		bound  float64 // the most reached/base; 0: a trap, only logged
	}{
		{"retry.Policy (3 attempts)", policyHTTP, 1.11},
		{"retryablehttp, RetryMax 2, httpbreaker.CheckRetry", retryableHTTP(2, true), 1.11},
		{"retryablehttp, RetryMax 2, DefaultRetryPolicy", retryableHTTP(2, false), 0},
		{"retryablehttp defaults (RetryMax 4, DefaultRetryPolicy)", retryableHTTP(4, false), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := httpScenario(t, tc.caller, 0, outage)
			ratio := float64(o.reached) / float64(base.reached)
			t.Logf("HTTP, %s: %d calls reached the dependency, %.2f× no retries; %d drops retried",
				tc.name, o.reached, ratio, o.dropsRetried)
			if tc.bound > 0 {
				assert.LessOrEqual(t, ratio, tc.bound)
				assert.Zero(t, o.dropsRetried, "a drop of the breaker is never retried")
			}
		})
	}
}

// TestHTTP_transientErrors_retriesSucceed: a healthy dependency fails 5%
// of its calls at random, at 200 calls/s; retried, at least 99% of the
// calls whose first attempt failed succeed, and the breaker drops none.
func TestHTTP_transientErrors_retriesSucceed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller httpCaller
	}{
		{"retry.Policy (3 attempts)", policyHTTP},
		{"retryablehttp, RetryMax 2, httpbreaker.CheckRetry", retryableHTTP(2, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := httpScenario(t, tc.caller, 0.05, healthy)
			require.Positive(t, o.firstFailures)
			saved := 1 - float64(o.failed)/float64(o.firstFailures)
			t.Logf("HTTP, 5%% transient errors, %s: %d first attempts failed, %d calls failed in the end (%.2f%% saved by a retry), %d dropped",
				tc.name, o.firstFailures, o.failed, 100*saved, o.dropped)
			assert.GreaterOrEqual(t, saved, 0.99)
			assert.Zero(t, o.dropped)
		})
	}
}
