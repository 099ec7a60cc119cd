package httpbreaker_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/retry"
)

func TestAttemptOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   int
	}{
		{name: "absent", want: 1},
		{name: "first", values: []string{"1"}, want: 1},
		{name: "retry", values: []string{"3"}, want: 3},
		{name: "zero", values: []string{"0"}, want: 1},
		{name: "negative", values: []string{"-4"}, want: 1},
		{name: "signed", values: []string{"+4"}, want: 1},
		{name: "not a number", values: []string{"two"}, want: 1},
		{name: "empty", values: []string{""}, want: 1},
		{name: "capped", values: []string{"1000"}, want: httpbreaker.MaxAttempt},
		{name: "beyond an int", values: []string{"99999999999999999999999"}, want: httpbreaker.MaxAttempt},
		{name: "first value read", values: []string{"2", "7"}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
			require.NoError(t, err)
			if tc.values != nil {
				r.Header[httpbreaker.AttemptHeader] = tc.values
			}
			assert.Equal(t, tc.want, httpbreaker.AttemptOf(r))
		})
	}
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
