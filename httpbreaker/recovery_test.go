package httpbreaker_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/internal/transporttest"
)

// TestTransportAndHandler_recoverTogether measures how a client breaker
// (Transport) and a server breaker (Handler) readmit a dependency, the
// server's handler, that healed after a 20 s outage at 200 requests/s, on
// a real server on 127.0.0.1, both breakers reading one virtual clock: 10
// runs, seeds 1 to 10, run at once (transporttest.RecoverTogether, which
// holds the scenario and the goal: the first success within 0.15 s of
// healing, and 95 % of calls succeeding within 1 s, in every run).
func TestTransportAndHandler_recoverTogether(t *testing.T) {
	transporttest.RecoverTogether(t, func(server, client *breaker.Registry) transporttest.Wire {
		var down bool // read and written by the driver's goroutine and the handler's, one at a time
		var reached int64
		dep := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			reached++
			if down {
				http.Error(w, "down", http.StatusInternalServerError)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		done := make(chan struct{}, 1)
		h := httpbreaker.MustNewHandler(dep, httpbreaker.WithRegistry(server))
		url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			done <- struct{}{}
		}))
		base := http.DefaultTransport.(*http.Transport).Clone()
		t.Cleanup(base.CloseIdleConnections)
		c := &http.Client{Transport: httpbreaker.MustNewTransport(base, httpbreaker.WithRegistry(client))}
		return transporttest.Wire{
			SetDown: func(d bool) { down = d },
			Reached: func() int64 { return reached },
			Call: func() bool {
				resp, err := c.Get(url)
				if err != nil {
					return false
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				<-done // the server has recorded the call
				return resp.StatusCode == http.StatusOK
			},
		}
	})
}
