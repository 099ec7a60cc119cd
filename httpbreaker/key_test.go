package httpbreaker_test

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// answerer is a RoundTripper that answers every request itself, 200 with
// an empty body, without a network: for tests about the breakers a
// Transport keeps, not about the calls.
type answerer struct{}

func (answerer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// growth returns how much the live heap grew while f ran, after garbage
// collection.
func growth(f func()) int64 {
	var before, after runtime.MemStats
	// Twice: what sync.Pools hold goes at the second collection.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// roundTrip sends a GET of http://host/ through t, not through an
// http.Client, which would parse and check a URL of that length, and
// closes the response body.
func roundTrip(t *testing.T, tr http.RoundTripper, host string) {
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: host, Path: "/"}, Host: host, Header: http.Header{}}
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
}

// 200 requests through a Transport to hosts of 1 MiB each grew the heap by
// 202 MiB, all of it held by the registry (issue 22).
func TestTransport_longHostsCostABoundedAmount(t *testing.T) {
	const hosts, size = 200, 1 << 20
	// What hosts breakers with short names hold: measured twice, the
	// larger kept, since memory that an earlier test's goroutines free
	// meanwhile makes one measurement smaller than what the breakers hold.
	var shortRegs []*breaker.Registry
	var base int64
	for range 2 {
		shortReg := breaker.MustNewRegistry()
		shortRegs = append(shortRegs, shortReg)
		short := httpbreaker.MustNewTransport(answerer{}, httpbreaker.WithRegistry(shortReg))
		base = max(base, growth(func() {
			for i := range hosts {
				roundTrip(t, short, fmt.Sprintf("h%04d.example", i))
			}
		}))
	}

	longReg := breaker.MustNewRegistry()
	long := httpbreaker.MustNewTransport(answerer{}, httpbreaker.WithRegistry(longReg))
	grown := growth(func() {
		label := strings.Repeat("a", 63) + "."
		host := strings.Repeat(label, size/len(label))
		for i := range hosts {
			// Hosts of 1 MiB, distinct only at their end: the request is
			// answered in-process, so nothing is resolved or dialed.
			roundTrip(t, long, fmt.Sprintf("%sh%04d", host, i))
		}
	})
	bound := base + hosts*breaker.MaxNameLen
	t.Logf("%d hosts of %d bytes: the heap grew by %d bytes (short hosts: %d); bound %d",
		hosts, size, grown, base, bound)
	assert.LessOrEqual(t, grown, bound+bound/10+64<<10, "short hosts' breakers and a bounded name each, with slack")
	n := 0
	longReg.Range(func(name string, _ breaker.Breaker) bool {
		assert.LessOrEqual(t, len(name), breaker.MaxNameLen)
		n++
		return true
	})
	assert.Equal(t, hosts, n, "a breaker per host")
	runtime.KeepAlive(shortRegs)
	runtime.KeepAlive(longReg)
}
