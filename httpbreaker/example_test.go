package httpbreaker_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The examples run a real server on loopback, since a RoundTripper is only
// worth showing against one; a mock clock and a seeded random source make
// their output reproducible, and real code leaves both at their defaults.

// exampleServer serves h on 127.0.0.1 with a port the system picks, and
// returns its URL and a function that stops it.
func exampleServer(h http.Handler) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }
}

// exampleRegistry returns a registry whose breakers read a mock clock and a
// seeded random source.
func exampleRegistry() *breaker.Registry {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return breaker.NewRegistry(breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
}

func ExampleNewTransport() {
	var received atomic.Int64
	url, stop := exampleServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer stop()

	// One breaker per host, from this registry.
	tr := httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(exampleRegistry()))
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()

	failed, dropped := 0, 0
	for range 100 {
		resp, err := client.Get(url)
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
	url, stop := exampleServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer stop()

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
		httpbreaker.WithRegistry(exampleRegistry()), httpbreaker.WithFallback(stale))}
	defer client.CloseIdleConnections()

	answers := map[string]int{}
	for range 100 {
		resp, err := client.Get(url + "/prices")
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
	// A handler that fails: the breaker in front of it starts shedding.
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database unreachable", http.StatusInternalServerError)
	})
	h := httpbreaker.MustNewHandler(failing, httpbreaker.WithRegistry(exampleRegistry()))
	url, stop := exampleServer(h)
	defer stop()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	statuses := map[string]int{}
	for range 100 {
		resp, err := (&http.Client{Transport: tr}).Get(url)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		statuses[fmt.Sprintf("%d Retry-After=%q", resp.StatusCode, resp.Header.Get("Retry-After"))]++
	}
	fmt.Println(statuses)
	// Output: map[500 Retry-After="":21 503 Retry-After="1":79]
}

func ExampleWithClassifier() {
	url, stop := exampleServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	}))
	defer stop()

	// For this dependency a 404 means it lost data: count it as a failure,
	// and defer to the default for everything else.
	classify := func(req *http.Request, resp *http.Response, err error) httpbreaker.Outcome {
		if err == nil && resp.StatusCode == http.StatusNotFound {
			return httpbreaker.Failure
		}
		return httpbreaker.ClientClassifier(req, resp, err)
	}
	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil,
		httpbreaker.WithRegistry(exampleRegistry()), httpbreaker.WithClassifier(classify))}
	defer client.CloseIdleConnections()

	notFound, dropped := 0, 0
	for range 100 {
		resp, err := client.Get(url + "/documents/7")
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
