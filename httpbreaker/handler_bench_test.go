package httpbreaker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// benchWriter is a ResponseWriter that keeps nothing, so that the benchmark
// measures the Handler alone.
type benchWriter struct{ h http.Header }

func (d *benchWriter) Header() http.Header         { return d.h }
func (d *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *benchWriter) WriteHeader(int)             {}

// BenchmarkHandler_ServeHTTP is what the Handler adds to a request it
// serves, with its overload limit on (the default) and off, and to a
// request that claims a level other than the default (SHEDDABLE) of a
// Handler that believes it.
func BenchmarkHandler_ServeHTTP(b *testing.B) {
	for _, bc := range []struct {
		name  string
		on    bool
		level string
	}{{"limit-on", true, ""}, {"limit-off", false, ""}, {"limit-on-sheddable", true, "SHEDDABLE"}} {
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
				ctx, m = chain.With(ctx)
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
