package statuspage_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/docsample"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/statuspage"
)

var update = flag.Bool("update", false, "rewrite the guide's samples from what the code prints")

// The JSON that docs/guide/statuspage.md shows is the page's answer to
// ?format=json: a breaker whose dependency refuses connections after a
// healthy second, asked twice a second apart, on a mock clock.
func TestSample_json(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 12, 0, 50, 0, time.UTC))
	reg := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	page := statuspage.MustNew(reg, statuspage.WithClock(m))
	b := reg.Get("checkout")
	calls := func(n int, fail bool) {
		for range n {
			p, err := b.Allow()
			if err != nil {
				continue
			}
			if fail {
				p.Reject("checkout: dial tcp: connect: connection refused")
			} else {
				p.Accept()
			}
		}
	}
	calls(40, false)
	m.Add(time.Second)
	calls(20, true)
	get := func() []byte {
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		return rec.Body.Bytes()
	}
	get()
	m.Add(500 * time.Millisecond)
	calls(20, true)
	m.Add(500 * time.Millisecond)
	var out bytes.Buffer
	require.NoError(t, json.Indent(&out, get(), "", "  "))
	docsample.Check(t, "../docs/guide/statuspage.md", "status-json", out.String(), *update)
}
