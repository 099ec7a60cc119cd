package faulttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// answerBody is what the dependency answers: 4 KiB, so that a slicer
// cuts it into many pieces.
var answerBody = strings.Repeat("0123456789abcdef", 256)

// serve runs h on a free port of 127.0.0.1 until the test ends and
// returns its address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// backend is the dependency of the HTTP and gRPC tests: a net/http server
// on 127.0.0.1 behind a proxy, which answers every request with
// answerBody.
func backend(t *testing.T) *proxy {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, answerBody)
	}))
	return newProxy(t, addr)
}

// newHTTPClient returns a client of its own (no connection shared with
// another test), closed when the test ends.
func newHTTPClient(t *testing.T, rt http.RoundTripper) *http.Client {
	c := &http.Client{Transport: rt}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func newHTTPTransport() *http.Transport {
	return &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: 0}
}

// get gets url with ctx and call id id through c, and returns an error for
// anything but 200 with answerBody.
func get(ctx context.Context, c *http.Client, url string, id int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set(callHeader, strconv.Itoa(id))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if string(body) != answerBody {
		return errors.New("the answer's body is not what the dependency sent")
	}
	return nil
}

// callHeader carries a call's id to a server.
const callHeader = "X-Call"

// headerID returns the call id of r, or -1.
func headerID(r *http.Request) int {
	id, err := strconv.Atoi(r.Header.Get(callHeader))
	if err != nil {
		return -1
	}
	return id
}

// hookTransport is the RoundTripper a Transport wraps: it tells the
// harness when a call is let through and when its answer (the whole body)
// arrived, which it holds until the call's virtual release.
type hookTransport struct {
	h    *harness
	base http.RoundTripper
}

func (t *hookTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	id := callID(ctx)
	t.h.admit(id)
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			resp = nil
		}
	}
	t.h.answer(ctx, id)
	return resp, err
}

// TestTransport_RoundTrip_faults: a client's Transport in front of a
// dependency behind the proxy.
func TestTransport_RoundTrip_faults(t *testing.T) {
	runFaults(t, func(t *testing.T, h *harness) (integration, *proxy) {
		p := backend(t)
		tr := httpbreaker.MustNewTransport(&hookTransport{h: h, base: newHTTPTransport()},
			httpbreaker.WithRegistry(h.reg))
		c := newHTTPClient(t, tr)
		url := "http://" + p.addr() + "/"
		return integration{ready: c.CloseIdleConnections, do: func(ctx context.Context, id int) error {
			err := get(ctx, c, url, id)
			if err != nil && !closed(h.get(id).admitted) && !errors.Is(err, breaker.ErrServiceUnavailable) {
				return fmt.Errorf("call %d failed before it was let through, not dropped: %w", id, err)
			}
			return err
		}}, p
	})
}

// TestHandler_ServeHTTP_faults: a server's Handler in front of a handler
// whose dependency is behind the proxy; its clients call it directly.
func TestHandler_ServeHTTP_faults(t *testing.T) {
	runFaults(t, func(t *testing.T, h *harness) (integration, *proxy) {
		p := backend(t)
		dep := newHTTPClient(t, newHTTPTransport())
		url := "http://" + p.addr() + "/"
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := headerID(r)
			h.admit(id)
			err := get(r.Context(), dep, url, id)
			h.answer(r.Context(), id)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			_, _ = io.WriteString(w, answerBody)
		})
		hb := httpbreaker.MustNewHandler(inner, httpbreaker.WithRegistry(h.reg))
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hb.ServeHTTP(w, r)
			h.finished(headerID(r))
		}))
		c := newHTTPClient(t, newHTTPTransport())
		front := "http://" + addr + "/"
		return integration{serverSide: true, do: func(ctx context.Context, id int) error {
			return get(ctx, c, front, id)
		}}, p
	})
}
