package httpbreaker_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// benchWriter is a ResponseWriter that keeps nothing, so that the benchmark
// measures the Handler alone.
type benchWriter struct{ h http.Header }

func (d *benchWriter) Header() http.Header         { return d.h }
func (d *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *benchWriter) WriteHeader(int)             {}

// BenchmarkHandler_ServeHTTP is what the Handler adds to a request it
// serves, with its overload limit on (the default) and off.
func BenchmarkHandler_ServeHTTP(b *testing.B) {
	for _, bc := range []struct {
		name string
		on   bool
	}{{"limit-on", true}, {"limit-off", false}} {
		b.Run(bc.name, func(b *testing.B) {
			h := httpbreaker.MustNewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
				httpbreaker.WithRegistry(breaker.MustNewRegistry()), httpbreaker.WithOverloadLimit(bc.on))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			w := &benchWriter{h: http.Header{}}
			b.ReportAllocs()
			for range b.N {
				h.ServeHTTP(w, r)
			}
		})
	}
}
