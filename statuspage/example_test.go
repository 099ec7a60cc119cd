package statuspage_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/statuspage"
)

// The page is mounted where the caller chooses, like net/http/pprof's
// handlers: here on a mux of its own, meant for an admin listener on
// loopback. The same URL with ?format=json returns the data for scripts.
func ExampleNew() {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	page, err := statuspage.New(reg, statuspage.WithClock(m))
	if err != nil {
		panic(err)
	}
	admin := http.NewServeMux()
	admin.Handle("/debug/breakers", page)
	// go http.ListenAndServe("127.0.0.1:6060", admin)

	b := reg.Get("payments")
	for range 20 {
		if p, err := b.Allow(); err == nil {
			p.Reject("connection refused")
		}
	}

	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/breakers?format=json", nil))
	var s statuspage.Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		panic(err)
	}
	for _, b := range s.Breakers {
		fmt.Printf("%s: drop probability %.2f, %d failures, %d drops, last %q\n",
			b.Name, b.DropProbability, b.Failures, b.Drops, b.Reasons[0].Text)
	}
	// Output:
	// payments: drop probability 0.76, 11 failures, 9 drops, last "connection refused"
}
