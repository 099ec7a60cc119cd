package httpbreaker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/heldcalls"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// benchWriter is a ResponseWriter that keeps nothing, so that the benchmark
// measures the Handler alone.
type benchWriter struct{ h http.Header }

func (d *benchWriter) Header() http.Header         { return d.h }
func (d *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *benchWriter) WriteHeader(int)             {}

// BenchmarkHandler_ServeHTTP is what the Handler adds to a request it
// serves, with its overload limit on (the default) and off, to a request
// that claims a level other than the default (SHEDDABLE) of a Handler
// that believes it, and to one that claims the default (CRITICAL), whose
// header the request served does not carry.
func BenchmarkHandler_ServeHTTP(b *testing.B) {
	for _, bc := range []struct {
		name  string
		on    bool
		level string
	}{{"limit-on", true, ""}, {"limit-off", false, ""}, {"limit-on-sheddable", true, "SHEDDABLE"},
		{"limit-on-critical", true, "CRITICAL"}} {
		b.Run(bc.name, func(b *testing.B) {
			h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
				httpbreaker.WithRegistry(breaker.MustNewRegistry()), httpbreaker.WithOverloadLimit(bc.on),
				httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus)))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if bc.level != "" {
				r.Header.Set(httpbreaker.CriticalityHeader, bc.level)
			}
			w := &benchWriter{h: http.Header{}}
			b.ReportAllocs()
			for range b.N {
				h.ServeHTTP(w, r)
			}
		})
	}
}

// stubRoundTripper answers every request with resp, and no network.
type stubRoundTripper struct{ resp *http.Response }

func (s stubRoundTripper) RoundTrip(*http.Request) (*http.Response, error) { return s.resp, nil }

// BenchmarkTransport_RoundTrip is what the Transport adds to a call,
// made outside a served request, and inside one an overload limit let in:
// there the call gives the request's room back, and its server breaker's
// promise up, while it is out (see package chain): two more turns of the
// limit's lock, two of the request's Mark, and the promise taken again.
func BenchmarkTransport_RoundTrip(b *testing.B) {
	resp := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}}
	for _, bc := range []struct {
		name   string
		served bool
	}{{"outside-a-request", false}, {"inside-a-served-request", true}} {
		b.Run(bc.name, func(b *testing.B) {
			t := httpbreaker.MustNewTransport(stubRoundTripper{resp}, httpbreaker.WithRegistry(breaker.MustNewRegistry()))
			ctx := context.Background()
			if bc.served {
				slot, err := serverside.NewLimiter(nil).Acquire(ctx, criticality.Default)
				if err != nil {
					b.Fatal(err)
				}
				defer slot.Release(true)
				var m *chain.Mark
				ctx, m = chain.With(ctx, criticality.Default)
				slot.Hold(m)
				p, err := breaker.MustNew().Allow()
				if err != nil {
					b.Fatal(err)
				}
				defer m.Watch(p).Accept()
			}
			r := httptest.NewRequest(http.MethodGet, "http://dependency.example/", nil).WithContext(ctx)
			b.ReportAllocs()
			for range b.N {
				if _, err := t.RoundTrip(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rejecting returns a Handler whose overload limit is full, one request
// in its handler and one queued, so that a SHEDDABLE request is rejected
// at once, and a request of that level; stop lets the two requests go.
func rejecting(tb testing.TB) (h *httpbreaker.Handler, sheddable func() *http.Request, stop func()) {
	tb.Helper()
	gate := heldcalls.New()
	reg := breaker.MustNewRegistry()
	h = httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { gate.Hold() }),
		httpbreaker.WithRegistry(reg), httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus)))
	httpbreaker.SetOverloadClock(h, clock.NewMock()) // no time passes: the queued request stays
	httpbreaker.ForceOverload(h, httpbreaker.DefaultHandlerKey, 1, true)
	sheddable = func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set(httpbreaker.CriticalityHeader, "SHEDDABLE")
		return r
	}
	overload := func() *breaker.OverloadStats { return reg.Get(httpbreaker.DefaultHandlerKey).Stats().Overload }
	gate.Fill(func() { h.ServeHTTP(&benchWriter{h: http.Header{}}, sheddable()) },
		func() bool { return overload().Queued > 0 })
	return h, sheddable, func() {
		if o := overload(); o.Rejected == [4]int64{} {
			tb.Errorf("no request was rejected: %+v", o)
		}
		gate.Release()
	}
}

// BenchmarkHandler_ServeHTTP_rejected is what the Handler spends on a
// request its overload limit rejects at once (see rejecting): a 503
// before the handler runs.
func BenchmarkHandler_ServeHTTP_rejected(b *testing.B) {
	h, sheddable, stop := rejecting(b)
	defer stop()
	r, w := sheddable(), &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h.ServeHTTP(w, r)
	}
	b.StopTimer()
}

// A request the overload limit rejects costs the Handler no allocation,
// at a level other than the default too (a SHEDDABLE request): the
// breaker is asked at the level without a context that carries it, made
// only for a request served, and the answer's headers and body are made
// once.
func TestHandler_rejectionAllocatesNothing(t *testing.T) {
	h, sheddable, stop := rejecting(t)
	defer stop()
	r, w := sheddable(), &benchWriter{h: http.Header{}}
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }))
	assert.Equal(t, http.Header{
		"Retry-After":              {"1"},
		httpbreaker.RetryHeader:    {httpbreaker.RetryLater},
		httpbreaker.OverloadHeader: {"1"},
		"Content-Type":             {"text/plain; charset=utf-8"},
		"X-Content-Type-Options":   {"nosniff"},
	}, w.h)
}
