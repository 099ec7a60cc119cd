package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/srebreaker/srebreaker/httpbreaker"
)

// httpChain is the chain over HTTP/1.1: Handlers and Transports.
func httpChain(c *dependency, a, b, client *process) (func(time.Duration) error, func(), error) {
	var servers []*http.Server
	var transports []*http.Transport
	stop := func() {
		for _, s := range servers {
			_ = s.Close()
		}
		for _, t := range transports {
			t.CloseIdleConnections()
		}
	}
	serve := func(h http.Handler) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, s)
		go func() { _ = s.Serve(ln) }()
		return "http://" + ln.Addr().String(), nil
	}
	guarded := func(p *process) *http.Client {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 256
		transports = append(transports, t)
		return &http.Client{Transport: httpbreaker.MustNewTransport(t, httpbreaker.WithRegistry(p.reg))}
	}
	// relay is a handler that calls next through p's Transport, and
	// answers 502 when that call fails.
	relay := func(p *process, next string) http.Handler {
		hc := guarded(p)
		return httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := httpGet(r.Context(), hc, next); err != nil {
				http.Error(w, "dependency failed", http.StatusBadGateway)
				return
			}
			_, _ = io.WriteString(w, "ok")
		}), httpbreaker.WithRegistry(p.reg))
	}

	cURL, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.reached.Add(1)
		if c.hangs(r.Context()) {
			return
		}
		if c.down.Load() {
			http.Error(w, "dependency C is down", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	if err != nil {
		stop()
		return nil, nil, err
	}
	bURL, err := serve(relay(b, cURL))
	if err != nil {
		stop()
		return nil, nil, err
	}
	aURL, err := serve(relay(a, bURL))
	if err != nil {
		stop()
		return nil, nil, err
	}
	hc := guarded(client)
	return func(deadline time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		return httpGet(ctx, hc, aURL)
	}, stop, nil
}

// httpGet gets url through hc, and fails on an error or a status that is
// not 2xx.
func httpGet(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return httpbreaker.ResponseError(resp)
}
