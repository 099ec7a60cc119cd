package statuspage

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// FuzzQueryFormat reads a request's query as the page does. It checks the
// format against url.ParseQuery's reading (where that reads at all: up to
// 10,000 parameters), that a second read gives the same, that a format
// written by url.Values reads back as itself, that the page answers 400 for
// exactly the formats that are none, with an error of bounded length, and
// that a long query allocates next to nothing. Its seed corpus is in
// testdata/fuzz; go test runs it, make fuzz explores from it.
func FuzzQueryFormat(f *testing.F) {
	page := MustNew(breaker.MustNewRegistry(breaker.WithClock(clock.NewMock())), WithClock(clock.NewMock()))
	f.Fuzz(func(t *testing.T, query string) {
		format, ok := queryFormat(query)
		again, againOK := queryFormat(query)
		require.Equal(t, format, again, "a second read")
		require.Equal(t, ok, againOK, "a second read")
		named := format == "" || format == "html" || format == "json"
		require.Equal(t, named, ok, "%q read as %q", query, format)
		require.LessOrEqual(t, len(format), maxQuotedFormat+len("…"))

		if strings.Count(query, "&") < 10000 {
			values, _ := url.ParseQuery(query)
			want := values.Get("format")
			if want == "" || want == "html" || want == "json" {
				require.Equal(t, want, format, "%q", query)
			} else {
				require.False(t, ok, "%q asks for %q", query, want)
			}
		}

		// A format written by url.Values reads back, whatever follows it:
		// the first format counts.
		for _, v := range []string{"json", "html", "<b>"} {
			back, backOK := queryFormat(url.Values{"format": {v}}.Encode() + "&" + query)
			require.Equal(t, v, back)
			require.Equal(t, v != "<b>", backOK)
		}

		w := httptest.NewRecorder()
		page.ServeHTTP(w, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/", RawQuery: query}})
		if !ok {
			require.Equal(t, http.StatusBadRequest, w.Code, "%q", query)
			require.LessOrEqual(t, w.Body.Len(), 200, "the error quotes a bounded part of the query")
			require.True(t, utf8.Valid(w.Body.Bytes()), "%q", w.Body.String())
			return
		}
		require.Equal(t, http.StatusOK, w.Code, "%q", query)
		wantType := "text/html; charset=utf-8"
		if format == "json" {
			wantType = "application/json; charset=utf-8"
		}
		require.Equal(t, wantType, w.Header().Get("Content-Type"))

		if len(query) > 64 {
			require.LessOrEqual(t, testing.AllocsPerRun(1, func() { queryFormat(query) }), 1.0,
				"a long query allocates")
		}
	})
}

// TestServeHTTP_hugeQueryAllocatesLittle: url.Query read every parameter
// of a query of a megabyte into a map, and gave up past 10,000 of them,
// serving the page to a request whose format named none.
func TestServeHTTP_hugeQueryAllocatesLittle(t *testing.T) {
	page := MustNew(breaker.MustNewRegistry(breaker.WithClock(clock.NewMock())), WithClock(clock.NewMock()))
	serve := func(query string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		page.ServeHTTP(w, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/", RawQuery: query}})
		return w
	}
	w := serve(strings.Repeat("a=1&", 20000) + "format=bogus")
	assert.Equal(t, http.StatusBadRequest, w.Code, "past 10,000 parameters")
	assert.Equal(t, "statuspage: format \"bogus\": want json or html\n", w.Body.String())

	allocated := func(query string) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range 10 {
			serve(query)
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 10
	}
	huge := strings.Repeat("x=yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy&", 1<<14) + "format=json"
	assert.Equal(t, "application/json; charset=utf-8", serve(huge).Header().Get("Content-Type"))
	plain := allocated("format=json")
	assert.Less(t, allocated(huge), plain+1024, "a megabyte of query costs more than the page")
}
