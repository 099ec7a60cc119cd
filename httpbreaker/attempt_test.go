package httpbreaker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/retry"
)

// TestAttemptOf reads the wire only: serverside's TestParseAttempt holds
// the rules.
func TestAttemptOf(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	assert.Equal(t, 1, httpbreaker.AttemptOf(r), "no header")
	r.Header.Set(httpbreaker.AttemptHeader, "3")
	assert.Equal(t, 3, httpbreaker.AttemptOf(r))
	r.Header.Set(httpbreaker.AttemptHeader, "1000")
	assert.Equal(t, 100, httpbreaker.AttemptOf(r), "capped at 100, as its doc says")
	r.Header[httpbreaker.AttemptHeader] = []string{"2", "7"}
	assert.Equal(t, 2, httpbreaker.AttemptOf(r), "the first value read")
}

func TestTransport_RoundTrip_sendsAttempt(t *testing.T) {
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Seen", strconv.Itoa(httpbreaker.AttemptOf(r)))
		w.Header().Set("Raw", r.Header.Get(httpbreaker.AttemptHeader))
	}))
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithBreakers(newRegistry().Get))}
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		seen    string
		rawSent string
	}{
		{name: "outside a retry loop", ctx: context.Background(), seen: "1"},
		{name: "first attempt", ctx: retry.WithAttempt(context.Background(), 1), seen: "1"},
		{name: "second attempt", ctx: retry.WithAttempt(context.Background(), 2), seen: "2", rawSent: "2"},
		{name: "third attempt", ctx: retry.WithAttempt(context.Background(), 3), seen: "3", rawSent: "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(tc.ctx, http.MethodGet, url, nil)
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, tc.seen, resp.Header.Get("Seen"))
			assert.Equal(t, tc.rawSent, resp.Header.Get("Raw"))
			assert.Empty(t, req.Header.Get(httpbreaker.AttemptHeader), "the caller's request is left as it was")
		})
	}
}
