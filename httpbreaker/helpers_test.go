package httpbreaker_test

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/internal/transporttest"
)

// serve runs h on a real server on 127.0.0.1 with a port the system picks,
// until the test ends, and returns its base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// The helpers the transports' tests share, under the names these tests
// use.
type countingRegistry = transporttest.Registry

var newRegistry = transporttest.NewRegistry

// trackedBody is a request or response body that counts reads and closes,
// and closes the body it wraps, if any.
type trackedBody struct {
	r             io.Reader
	c             io.Closer // may be nil
	reads, closes atomic.Int64
}

func (b *trackedBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.r.Read(p)
}

func (b *trackedBody) Close() error {
	b.closes.Add(1)
	if b.c != nil {
		return b.c.Close()
	}
	return nil
}

// trackingTransport wraps every response body in a trackedBody.
type trackingTransport struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*trackedBody
}

func (t *trackingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := &trackedBody{r: resp.Body, c: resp.Body}
	resp.Body = b
	t.mu.Lock()
	t.bodies = append(t.bodies, b)
	t.mu.Unlock()
	return resp, nil
}

var newManualDeadline = transporttest.NewManualDeadline

// loopback is a RoundTripper that sends every request, whatever its host,
// to the test server at addr over one pool of connections: a Transport over
// it sees as many hosts as the test makes up, and nothing leaves 127.0.0.1.
type loopback struct {
	addr string
	tr   *http.Transport
}

func newLoopback(t *testing.T, addr string) *loopback {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	t.Cleanup(tr.CloseIdleConnections)
	return &loopback{addr: addr, tr: tr}
}

func (l *loopback) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	u := *req.URL
	u.Host = l.addr
	out.URL, out.Host = &u, req.URL.Host
	return l.tr.RoundTrip(out)
}
