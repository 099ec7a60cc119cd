package httpbreaker_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// A Handler whose breaker sheds tells the client what to do about it, and
// a client's Transport leaves such an answer out of its own breaker.
func ExampleShedByServer() {
	m := clock.NewMock()
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	b := reg.Get(httpbreaker.DefaultHandlerKey)
	for i := 0; i < 100; { // the handler has failed 100 times
		if p, err := b.Allow(); err == nil {
			p.Reject("down")
			i++
		}
	}
	h := httpbreaker.MustNewHandler(http.NotFoundHandler(), httpbreaker.WithRegistry(reg))

	for {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Srebreaker-Attempt", "1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.Result()
		if resp.StatusCode != http.StatusServiceUnavailable {
			continue // admitted: the breaker sheds most requests, not all
		}
		fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get(httpbreaker.RetryHeader))
		fmt.Println("shed by the server:", httpbreaker.ShedByServer(resp))
		fmt.Println("on the client:", httpbreaker.ClientClassifier(req, resp, nil))
		break
	}
	// Output:
	// 503 1 later
	// shed by the server: true
	// on the client: ignore
}
