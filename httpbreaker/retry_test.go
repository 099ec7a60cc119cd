package httpbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/retry"
)

// answerWith returns a handler that answers with code and headers.
func answerWith(code int, headers ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
	})
}

func fetch(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp
}

func TestResponseError(t *testing.T) {
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		h       http.Handler
		want    *httpbreaker.StatusError
		noRetry bool
	}{
		{name: "ok", h: answerWith(200)},
		{name: "not found", h: answerWith(404)},
		{name: "not implemented", h: answerWith(501)},
		{name: "server error", h: answerWith(500, "Retry-After", "3"), want: &httpbreaker.StatusError{StatusCode: 500}},
		{name: "unavailable", h: answerWith(503), want: &httpbreaker.StatusError{StatusCode: 503}},
		{name: "retry after seconds", h: answerWith(503, "Retry-After", "2"),
			want: &httpbreaker.StatusError{StatusCode: 503, RetryAfter: 2 * time.Second}},
		{name: "retry after a date", h: answerWith(429, "Retry-After", date.Add(3*time.Second).Format(http.TimeFormat),
			"Date", date.Format(http.TimeFormat)),
			want: &httpbreaker.StatusError{StatusCode: 429, RetryAfter: 3 * time.Second}},
		{name: "retry after, bounded", h: answerWith(503, "Retry-After", "99999999999999999999"),
			want: &httpbreaker.StatusError{StatusCode: 503, RetryAfter: 5 * time.Minute}},
		{name: "retry after, not understood", h: answerWith(503, "Retry-After", "soon"),
			want: &httpbreaker.StatusError{StatusCode: 503}},
		{name: "don't retry, on a 500", h: answerWith(500, httpbreaker.RetryHeader, httpbreaker.RetryNo),
			want: &httpbreaker.StatusError{StatusCode: 500, NoRetry: true}, noRetry: true},
		{name: "later", h: answerWith(503, httpbreaker.RetryHeader, "later", "Retry-After", "1"),
			want: &httpbreaker.StatusError{StatusCode: 503, RetryAfter: time.Second}},
		{name: "don't retry", h: answerWith(503, httpbreaker.RetryHeader, httpbreaker.RetryNo, "Retry-After", "1"),
			want: &httpbreaker.StatusError{StatusCode: 503, RetryAfter: time.Second, NoRetry: true}, noRetry: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := fetch(t, serve(t, tc.h))
			err := httpbreaker.ResponseError(resp)
			if tc.want == nil {
				assert.NoError(t, err)
				ok, cerr := httpbreaker.CheckRetry(context.Background(), resp, nil)
				assert.False(t, ok)
				assert.NoError(t, cerr)
				return
			}
			var se *httpbreaker.StatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.want, se)
			assert.Equal(t, !tc.noRetry, retry.Retryable(err))
			ok, cerr := httpbreaker.CheckRetry(context.Background(), resp, nil)
			assert.Equal(t, !tc.noRetry, ok)
			assert.NoError(t, cerr)
		})
	}
	assert.NoError(t, httpbreaker.ResponseError(nil))
}

func TestCheckRetry_errors(t *testing.T) {
	drop := &url.Error{Op: "Get", URL: "http://127.0.0.1/", Err: fmt.Errorf("x: %w", breaker.ErrServiceUnavailable)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a transport error", errors.New("connection refused"), true},
		{"a drop", drop, false},
		{"a spent budget", &url.Error{Op: "Get", URL: "http://127.0.0.1/", Err: retry.ErrBudgetSpent}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := httpbreaker.CheckRetry(context.Background(), nil, tc.err)
			assert.Equal(t, tc.want, ok)
			assert.NoError(t, err)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, err := httpbreaker.CheckRetry(ctx, nil, errors.New("x"))
	assert.False(t, ok)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestPrepareRetry(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	require.NoError(t, err)
	require.NoError(t, httpbreaker.PrepareRetry(req))
	assert.Equal(t, 2, httpbreaker.AttemptOf(req))
	require.NoError(t, httpbreaker.PrepareRetry(req))
	assert.Equal(t, 3, httpbreaker.AttemptOf(req))
}

func TestTransport_RoundTrip_retryBudget(t *testing.T) {
	url := serve(t, answerWith(200))
	reg := breaker.MustNewRegistry()
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(reg))}
	do := func(ctx context.Context, attemptHeader string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		if attemptHeader != "" {
			req.Header.Set(httpbreaker.AttemptHeader, attemptHeader)
		}
		resp, err := client.Do(req)
		if err == nil {
			require.NoError(t, resp.Body.Close())
		}
		return err
	}
	require.NoError(t, do(context.Background(), ""))
	retryCtx := retry.WithAttempt(context.Background(), 2)
	for range retry.DefaultBudgetFloor {
		require.NoError(t, do(retryCtx, ""), "the floor grants a few retries")
	}
	err := do(retryCtx, "")
	assert.ErrorIs(t, err, retry.ErrBudgetSpent)
	assert.NotErrorIs(t, err, breaker.ErrServiceUnavailable, "a spent budget is not a drop")
	assert.ErrorIs(t, do(context.Background(), "2"), retry.ErrBudgetSpent, "a retry numbered by the header")
	assert.NoError(t, do(context.Background(), "1"), "a first attempt takes no budget")
}
