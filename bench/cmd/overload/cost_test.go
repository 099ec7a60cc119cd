package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/srebreaker/srebreaker/httpbreaker"
)

// discard is a ResponseWriter that keeps nothing, so that the benchmark
// measures the contender alone.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkContender_ServeHTTP is what each contender adds to a request
// it lets in, side by side in one run: an empty handler behind it, one
// request at a time, with no criticality header and with one that claims
// CRITICAL, the default level, as the harness's clients send it (our
// Handler serves such a request without the claim, on a copy of its
// header). It is the "cost in the middleware" for every
// contender, no network in it (go test -bench Contender -benchmem
// ./cmd/overload, from bench/).
func BenchmarkContender_ServeHTTP(b *testing.B) {
	empty := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, claim := range []string{"none", "CRITICAL"} {
		for _, c := range contenders {
			b.Run("header="+claim+"/"+c.name, func(b *testing.B) {
				h, stop := c.wrap(empty, 4)
				if stop != nil {
					defer stop()
				}
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				if claim != "none" {
					r.Header.Set(httpbreaker.CriticalityHeader, claim)
				}
				w := &discard{h: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					h.ServeHTTP(w, r)
				}
			})
		}
	}
}
