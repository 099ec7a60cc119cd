package main

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// outcome is how a call ended, as its client saw it.
type outcome int8

const (
	served    outcome = iota // 200 OK within the timeout
	rejected                 // 503 or 429 from the server
	timedOut                 // no answer within the timeout
	throttled                // dropped by the client's own Transport
	failed                   // any other error or status
)

// call is what the driver records of one call.
type call struct {
	outcome outcome
	lag     time.Duration // how late it was issued, behind its due time
	latency time.Duration // from issue to answer, for served calls
	done    time.Duration // when it ended, since the start of the run
}

// record is one contender's run of one scenario.
type record struct {
	arrivals []arrival
	calls    []call
	gone     int64 // work done for callers that had gone, in the measured phases
	slots    int   // the resource's
	holds    []hold
}

// inprocTransport calls a handler's ServeHTTP in the process, as a client
// over the network would: it waits for the answer until the request's
// context ends, and the handler's request then sees its context canceled,
// as a server's does when its client hangs up; the handler goes on in the
// background.
type inprocTransport struct{ h http.Handler }

func (t inprocTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(req.Context()))
	stop := context.AfterFunc(req.Context(), cancel)
	w := &recorder{header: http.Header{}, code: http.StatusOK}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stop()
		defer cancel()
		t.h.ServeHTTP(w, req.Clone(ctx))
	}()
	select {
	case <-done:
		return &http.Response{StatusCode: w.code, Header: w.header, Body: http.NoBody, Request: req}, nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// recorder is the least ResponseWriter: it keeps the header and the
// status, and drops the body.
type recorder struct {
	header http.Header
	code   int
	wrote  bool
}

func (w *recorder) Header() http.Header { return w.header }
func (w *recorder) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
}
func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

// server puts h on 127.0.0.1 and returns its URL, a client transport with
// room for as many connections as the run needs, and a function that
// closes both.
func server(h http.Handler) (url string, rt http.RoundTripper, closeAll func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	tr := &http.Transport{MaxIdleConnsPerHost: 8192, IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	return "http://" + ln.Addr().String() + "/", tr, func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
	}, nil
}

// inprocURL is the URL of the calls in process; its host keys the
// client Transport's breaker.
const inprocURL = "http://overload.test/"

// play runs arrivals through c in front of a fresh resource of w slots
// and mean service time mean, and returns what each call got. Calls are
// issued on the wall clock, each in a goroutine of its own, with a client
// timeout of timeout; behindTransport puts an httpbreaker Transport (its
// defaults, a registry of its own) in the clients. From scaleAt on (since
// the start; 0 for never) the service time is multiplied by scale. Work
// done for gone callers counts for the calls that arrived from goneFrom on.
func play(arrivals []arrival, c contender, w int, mean time.Duration, scaleAt time.Duration, scale float64,
	goneFrom, timeout time.Duration, inproc, behindTransport bool) (*record, error) {
	late := timerOverrun(mean)
	start := time.Now()
	res := newResource(w, mean, start)
	res.scaleAt, res.scale, res.late = scaleAt, scale, late
	h, stop := c.wrap(res, w)
	if stop != nil {
		defer stop()
	}
	url, rt := inprocURL, http.RoundTripper(inprocTransport{h})
	if !inproc {
		var closeAll func()
		var err error
		url, rt, closeAll, err = server(h)
		if err != nil {
			return nil, err
		}
		defer closeAll()
	}
	if behindTransport {
		reg, err := breaker.NewRegistry()
		if err != nil {
			return nil, err
		}
		rt = httpbreaker.MustNewTransport(rt, httpbreaker.WithRegistry(reg))
	}
	out := &record{arrivals: arrivals, calls: make([]call, len(arrivals))}
	var wg sync.WaitGroup
	start = time.Now()
	res.start = start
	for i := 0; i < len(arrivals); {
		now := time.Since(start)
		for ; i < len(arrivals) && arrivals[i].at <= now; i++ {
			wg.Add(1)
			go func(i int, lag time.Duration) {
				defer wg.Done()
				out.calls[i] = send(rt, url, i, arrivals[i], timeout, start)
				out.calls[i].lag = lag
			}(i, now-arrivals[i].at)
		}
		if i < len(arrivals) {
			if d := arrivals[i].at - time.Since(start); d > 0 {
				time.Sleep(d)
			}
		}
	}
	wg.Wait()
	res.close(time.Second + 60*mean)
	res.mu.Lock()
	out.gone = goneSince(res.gone, arrivals, goneFrom)
	out.slots, out.holds = w, res.holds
	res.mu.Unlock()
	return out, nil
}

// goneSince counts the calls of gone, indices into arrivals, that
// arrived from from on: a call that arrived before the measured phases
// and was served after its caller had gone, in them, is not theirs, as
// it is in no other figure of the row. An index out of range counts.
func goneSince(gone []int, arrivals []arrival, from time.Duration) int64 {
	var n int64
	for _, i := range gone {
		if i < 0 || i >= len(arrivals) || arrivals[i].at >= from {
			n++
		}
	}
	return n
}

// send makes call i, a, and says how it ended.
func send(rt http.RoundTripper, url string, i int, a arrival, timeout time.Duration, start time.Time) call {
	// The level in the context too, as a user of the Transport gives it:
	// its breaker then sheds the lowest levels first, and it sends the
	// header itself.
	ctx, cancel := context.WithTimeout(criticality.With(context.Background(), a.level), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return call{outcome: failed, done: time.Since(start)}
	}
	req.Header.Set(httpbreaker.CriticalityHeader, a.level.String())
	req.Header.Set(drawHeader, strconv.FormatFloat(a.draw, 'g', 6, 64))
	req.Header.Set(callHeader, strconv.Itoa(i))
	issued := time.Now()
	resp, err := rt.RoundTrip(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c := call{done: time.Since(start), latency: time.Since(issued)}
	switch {
	case errors.Is(err, breaker.ErrServiceUnavailable):
		c.outcome = throttled
	case err != nil && ctx.Err() != nil:
		c.outcome = timedOut
	case err != nil:
		c.outcome = failed
	case resp.StatusCode == http.StatusOK && c.latency <= timeout:
		c.outcome = served
	case resp.StatusCode == http.StatusOK:
		c.outcome = timedOut // answered, but the client, late itself, saw it after its timeout
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests:
		c.outcome = rejected
	default:
		c.outcome = failed
	}
	return c
}
