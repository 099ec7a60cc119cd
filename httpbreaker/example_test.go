package httpbreaker_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The examples run a real server on loopback (httptest), since a
// RoundTripper is only worth showing against one. Each gives its Transport
// or Handler a registry whose breakers read a mock clock and a seeded
// random source, so that the output is reproducible; real code leaves out
// WithRegistry, and its breakers live in breaker.DefaultRegistry().

func ExampleNewTransport() {
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	// One breaker per host, from the registry.
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(registry))}
	defer client.CloseIdleConnections()

	failed, dropped := 0, 0
	for range 100 {
		resp, err := client.Get(srv.URL)
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			dropped++ // never sent
			continue
		}
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		failed++
	}
	fmt.Println("failed:", failed, "dropped:", dropped, "received by the server:", received.Load())
	// Output: failed: 21 dropped: 79 received by the server: 21
}

func ExampleWithFallback() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer srv.Close()

	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	// Dropped requests get a stale answer instead of an error.
	stale := func(req *http.Request, err error) (*http.Response, error) {
		return &http.Response{
			Status:     "200 OK",
			StatusCode: http.StatusOK,
			Header:     http.Header{"Warning": {`110 - "stale"`}},
			Body:       io.NopCloser(strings.NewReader("yesterday's prices")),
			Request:    req,
		}, nil
	}
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil,
		httpbreaker.WithRegistry(registry), httpbreaker.WithFallback(stale))}
	defer client.CloseIdleConnections()

	answers := map[string]int{}
	for range 100 {
		resp, err := client.Get(srv.URL + "/prices")
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers[fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))]++
	}
	fmt.Println(answers)
	// Output: map[200 yesterday's prices:79 502 down:21]
}

func ExampleNewHandler() {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	// A handler that fails: the breaker in front of it starts shedding.
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database unreachable", http.StatusInternalServerError)
	})
	srv := httptest.NewServer(httpbreaker.MustNewHandler(failing, httpbreaker.WithRegistry(registry)))
	defer srv.Close()

	client := srv.Client()
	statuses := map[string]int{}
	for range 100 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		statuses[fmt.Sprintf("%d Retry-After=%q", resp.StatusCode, resp.Header.Get("Retry-After"))]++
	}
	fmt.Println(statuses)
	s := registry.Get(httpbreaker.DefaultHandlerKey).Stats()
	fmt.Println("the handler's breaker:", s.Name)
	// Output:
	// map[500 Retry-After="":21 503 Retry-After="1":79]
	// the handler's breaker: server:http
}

func ExampleWithClassifier() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	}))
	defer srv.Close()

	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	registry := breaker.MustNewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	// For this dependency a 404 means it lost data: count it as a failure,
	// and defer to the default for everything else.
	classify := func(req *http.Request, resp *http.Response, err error) httpbreaker.Outcome {
		if err == nil && resp.StatusCode == http.StatusNotFound {
			return httpbreaker.Failure
		}
		return httpbreaker.ClientClassifier(req, resp, err)
	}
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil,
		httpbreaker.WithRegistry(registry), httpbreaker.WithClassifier(classify))}
	defer client.CloseIdleConnections()

	notFound, dropped := 0, 0
	for range 100 {
		resp, err := client.Get(srv.URL + "/documents/7")
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			dropped++
			continue
		}
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		notFound++
	}
	fmt.Println("404:", notFound, "dropped:", dropped)
	// Output: 404: 21 dropped: 79
}

func ExampleWithRegistry() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()

	// Breakers of their own for these hosts, kept out of
	// breaker.DefaultRegistry(): at most 1000 of them, and more tolerant of
	// failures than the default.
	registry := breaker.MustNewRegistry(breaker.WithK(2))
	registry.SetLimit(1000)
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(registry))}
	defer client.CloseIdleConnections()

	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()

	// The breaker of the server's host, 127.0.0.1 and its port.
	host := strings.TrimPrefix(srv.URL, "http://")
	s := registry.Get(host).Stats()
	fmt.Println("successes:", s.TotalSuccesses, "failures:", s.TotalFailures)
	// Output: successes: 1 failures: 0
}

func ExampleWithCriticalityPolicy() {
	// The application answers with the level it is served at.
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s at %v", r.URL.Path, criticality.From(r.Context()))
	})
	// At the edge, anyone can send the header: the server decides, here by
	// route, and what clients claim is ignored.
	edge := httpbreaker.MustNewHandler(app, httpbreaker.WithRegistry(breaker.MustNewRegistry()),
		httpbreaker.WithCriticalityPolicy(httpbreaker.LevelFunc(func(r *http.Request) criticality.Level {
			if strings.HasPrefix(r.URL.Path, "/prefetch/") {
				return criticality.Sheddable
			}
			return criticality.Critical
		})))
	// Behind the edge, only trusted services call: their header counts.
	internal := httpbreaker.MustNewHandler(app, httpbreaker.WithRegistry(breaker.MustNewRegistry()),
		httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.CriticalPlus)))
	// Without the option, no header counts.
	plain := httpbreaker.MustNewHandler(app, httpbreaker.WithRegistry(breaker.MustNewRegistry()))

	for _, h := range []struct {
		name    string
		handler http.Handler
	}{{"edge", edge}, {"internal", internal}, {"default", plain}} {
		for _, path := range []string{"/checkout", "/prefetch/cart"} {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set(httpbreaker.CriticalityHeader, "CRITICAL_PLUS") // a client's claim
			rec := httptest.NewRecorder()
			h.handler.ServeHTTP(rec, req)
			fmt.Printf("%-8s %s\n", h.name, rec.Body)
		}
	}
	// Output:
	// edge     /checkout at CRITICAL
	// edge     /prefetch/cart at SHEDDABLE
	// internal /checkout at CRITICAL_PLUS
	// internal /prefetch/cart at CRITICAL_PLUS
	// default  /checkout at CRITICAL
	// default  /prefetch/cart at CRITICAL
}
