package httpbreaker

import (
	"context"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/serverside"
	"github.com/srebreaker/srebreaker/retry"
)

// The fuzz targets below read what the other side of an HTTP call sends:
// a client's attempt number and criticality, a server's Retry-After and
// retry advice. Each checks the result's range, that a second read gives
// the same, that what this package writes reads back as itself, and that
// a long header allocates nothing (or a bounded amount). Their seed
// corpora are in testdata/fuzz; go test runs them, make fuzz explores from
// them.

// allocatedBytes returns the bytes f allocates on average over runs calls.
func allocatedBytes(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// requestWith returns a GET request whose header key holds the values vs,
// comma-separated in joined ("" for none).
func requestWith(key, joined string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	if joined != "" {
		r.Header[key] = strings.Split(joined, ",")
	}
	return r
}

func FuzzAttemptOf(f *testing.F) {
	f.Fuzz(func(t *testing.T, joined string) {
		r := requestWith(AttemptHeader, joined)
		n := AttemptOf(r)
		require.True(t, n >= 1 && n <= serverside.MaxAttempt, "%q read as %d", joined, n)
		require.Equal(t, n, AttemptOf(r), "a second read")
		if vs := r.Header[AttemptHeader]; len(vs) > 0 {
			require.Equal(t, serverside.ParseAttempt(vs[0]), n, "the first value counts")
		}
		if len(joined) > 18 {
			require.Zero(t, testing.AllocsPerRun(1, func() { AttemptOf(r) }), "a long header allocates")
		}

		// What a Transport writes for attempt n reads back as n.
		sent := withAttempt(r.WithContext(retry.WithAttempt(context.Background(), n)))
		require.Equal(t, n, AttemptOf(sent), "attempt %d sent", n)

		// PrepareRetry counts one more, up to serverside.MaxAttempt.
		r.Header = r.Header.Clone()
		require.NoError(t, PrepareRetry(r))
		require.Equal(t, min(n+1, serverside.MaxAttempt), AttemptOf(r))
	})
}

// levels are the four levels, highest first.
var levels = []criticality.Level{criticality.CriticalPlus, criticality.Critical,
	criticality.SheddablePlus, criticality.Sheddable}

func FuzzCriticalityHeader(f *testing.F) {
	b := breaker.MustNew(breaker.WithClock(clock.NewMock()))
	f.Fuzz(func(t *testing.T, joined string, maxIndex uint8) {
		r := requestWith(CriticalityHeader, joined)
		limit := levels[int(maxIndex)%len(levels)]
		policy := TrustHeader(limit)
		c := policy.Level(r)
		require.True(t, c.Valid(), "%q read as %v", joined, c)
		require.LessOrEqual(t, c, limit, "%q read above the policy's max", joined)
		require.Equal(t, c, policy.Level(r), "a second read")
		require.Equal(t, min(serverside.Claimed(r.Header.Get(CriticalityHeader)), limit), c, "%q", joined)
		require.Equal(t, criticality.Default, IgnoreHeader().Level(r), "ignored")

		// The request a Handler serves carries no claim it did not
		// believe: a header it had says the level served at (left as it
		// is when it names that level alone), or is removed for the
		// default; the context carries the level, made as it is served.
		ctx, level, reclaim, p, err := admit(b, r, policy)
		require.NoError(t, err)
		require.Equal(t, c, level)
		p.Accept()
		require.True(t, r.Context() == ctx, "no context is made before the request is let in")
		servedCtx, _ := new(chain.Context).Init(ctx, level)
		served := r.WithContext(servedCtx)
		if reclaim {
			served.Header = claimHeader(r.Header, level)
		}
		vs, had := served.Header[CriticalityHeader], len(r.Header[CriticalityHeader]) > 0
		switch {
		case !had:
			require.Empty(t, vs, "a claim appeared")
		case c == criticality.Default && !slices.Equal(r.Header[CriticalityHeader], []string{c.String()}):
			require.Empty(t, vs, "a claim the server did not believe is passed on")
		default:
			require.Equal(t, []string{c.String()}, vs)
		}
		require.Equal(t, c, criticality.From(served.Context()), "the level is in the context the Handler makes")
		require.Equal(t, joined, strings.Join(r.Header[CriticalityHeader], ","), "the request given is changed")

		// What a Transport writes for a level reads back as that level.
		sent := withCriticality(r, c)
		require.Equal(t, c, TrustHeader(criticality.CriticalPlus).Level(sent))
	})
}

// httpDate is a Date header's value for the fuzzer's seconds since the
// epoch, kept within years HTTP dates can write.
func httpDate(sec int64) (time.Time, string) {
	const years = 8000 * 365 * 24 * 3600 // from 1970 to before 9999
	sec %= years
	if sec < 0 {
		sec += years
	}
	d := time.Unix(sec, 0).UTC()
	return d, d.Format(http.TimeFormat)
}

func FuzzResponseError(f *testing.F) {
	f.Fuzz(func(t *testing.T, code int, retryAfterValue string, dateSec int64, advice string) {
		resp := &http.Response{StatusCode: code, Header: http.Header{}}
		date, dateValue := httpDate(dateSec)
		resp.Header.Set("Date", dateValue)
		if retryAfterValue != "" {
			resp.Header["Retry-After"] = []string{retryAfterValue}
		}
		if advice != "" {
			resp.Header[RetryHeader] = []string{advice}
		}
		err := ResponseError(resp)
		failed := code == http.StatusTooManyRequests || code >= 500 && code != http.StatusNotImplemented
		if !failed {
			require.NoError(t, err, "status %d", code)
			return
		}
		var se *StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, code, se.StatusCode)
		require.Equal(t, advice == RetryNo, se.NoRetry, "advice %q", advice)
		require.True(t, se.RetryAfter >= 0 && se.RetryAfter <= maxRetryAfter, "Retry-After %q read as %v", retryAfterValue, se.RetryAfter)
		require.Equal(t, se, ResponseError(resp), "a second read")
		wait, retries := se.RetryPushback()
		require.Equal(t, se.RetryAfter, wait)
		require.Equal(t, !se.NoRetry, retries)
		if code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable {
			require.Zero(t, se.RetryAfter, "Retry-After read on a %d", code)
			return
		}

		// The model: seconds through strconv, capped; a date through
		// http.ParseTime, against the Date header.
		var want time.Duration
		if serverside.IsDigits(retryAfterValue) {
			want = maxRetryAfter // beyond a uint64 too
			if s, perr := strconv.ParseUint(retryAfterValue, 10, 64); perr == nil {
				want = time.Duration(min(s, uint64(maxRetryAfter/time.Second))) * time.Second
			}
		} else if len(retryAfterValue) > 0 && len(retryAfterValue) <= maxHTTPDate {
			if at, perr := http.ParseTime(retryAfterValue); perr == nil {
				want = min(max(at.Sub(date), 0), maxRetryAfter)
			}
		}
		require.Equal(t, want, se.RetryAfter, "Retry-After %q, Date %q", retryAfterValue, dateValue)

		// What a Handler writes, whole seconds, reads back as itself; and
		// so does the same wait written as a date.
		resp.Header.Set("Retry-After", strconv.FormatInt(int64(se.RetryAfter/time.Second), 10))
		require.Equal(t, se.RetryAfter.Truncate(time.Second), retryAfter(resp))
		if at := date.Add(se.RetryAfter); at.Year() <= 9999 {
			resp.Header.Set("Retry-After", at.Format(http.TimeFormat))
			require.Equal(t, se.RetryAfter.Truncate(time.Second), retryAfter(resp))
		}

		if len(retryAfterValue) > maxHTTPDate {
			resp.Header.Set("Retry-After", retryAfterValue)
			require.Zero(t, testing.AllocsPerRun(1, func() { retryAfter(resp) }), "a long Retry-After allocates")
		}
	})
}

// TestRetryAfter_hugeHeaderAllocatesLittle: a Retry-After of a million
// digits, or of a million other bytes, allocated copies of itself through
// strconv's and time's errors.
func TestRetryAfter_hugeHeaderAllocatesLittle(t *testing.T) {
	for name, v := range map[string]string{
		"digits": "1" + strings.Repeat("0", 1<<20),
		"date":   "Sun, 06 Nov 1994 08:49:37 GMT" + strings.Repeat("x", 1<<20),
	} {
		resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}}
		resp.Header.Set("Retry-After", v)
		resp.Header.Set("Date", v)
		got := retryAfter(resp)
		assert.Less(t, allocatedBytes(10, func() { retryAfter(resp) }), uint64(1024), name)
		if name == "digits" {
			assert.Equal(t, maxRetryAfter, got)
		} else {
			assert.Zero(t, got)
		}
	}
}
