package statuspage_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/statuspage"
)

// BenchmarkPage_ServeHTTP serves the page and its JSON for 100 failing
// breakers, each with five reasons and a full minute of history: the most
// the default limit shows.
func BenchmarkPage_ServeHTTP(b *testing.B) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(m))
	for i := range statuspage.DefaultLimit {
		br := reg.Get(fmt.Sprintf("dependency-%03d.example:443", i))
		for range 20 {
			if p, err := br.Allow(); err == nil {
				p.Reject("dial tcp: connect: connection refused")
			}
		}
	}
	page := statuspage.MustNew(reg, statuspage.WithClock(m))
	for range 61 {
		m.Add(time.Second)
		page.Snapshot()
	}
	for _, target := range []string{"/?format=json", "/"} {
		b.Run(target, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			rec := httptest.NewRecorder()
			page.ServeHTTP(rec, req)
			size := rec.Body.Len()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				rec := httptest.NewRecorder()
				page.ServeHTTP(rec, req)
			}
			b.ReportMetric(float64(size), "bytes/response")
		})
	}
}
