package httpbreaker_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// app is the handler under the breaker. Paths:
//
//	/status/N  answers status N
//	/panic/V   panics with the string V, or http.ErrAbortHandler for "abort"
type app struct{ served atomic.Int64 }

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.served.Add(1)
	switch {
	case strings.HasPrefix(r.URL.Path, "/status/"):
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, "status %d", code)
	case r.URL.Path == "/panic/abort":
		panic(http.ErrAbortHandler)
	case strings.HasPrefix(r.URL.Path, "/panic/"):
		panic(strings.TrimPrefix(r.URL.Path, "/panic/"))
	default:
		_, _ = io.WriteString(w, "ok")
	}
}

// serveHandler runs next under a Handler made with opts on a loopback
// server, and returns the server's URL, the registry and a plain client.
func serveHandler(t *testing.T, next http.Handler, opts ...httpbreaker.HandlerOption) (string, *countingRegistry, *http.Client) {
	t.Helper()
	reg := newRegistry()
	h, err := httpbreaker.NewHandler(next, append([]httpbreaker.HandlerOption{httpbreaker.WithBreakers(reg.Get)}, opts...)...)
	require.NoError(t, err)
	base := serve(t, h)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return base, reg, &http.Client{Transport: tr}
}

func TestHandler_ServeHTTP_classifiesStatuses(t *testing.T) {
	for _, tc := range []struct {
		status int
		ok     bool
	}{
		{200, true}, {204, true}, {302, true}, {400, true}, {404, true}, {429, true},
		{500, false}, {502, false}, {503, false}, {504, false},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			a := &app{}
			base, reg, client := serveHandler(t, a)
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			code, _, err := get(client, fmt.Sprintf("%s/status/%d", base, tc.status))
			require.NoError(t, err)
			assert.Equal(t, tc.status, code)
			accepts, total := reg.Totals(httpbreaker.DefaultHandlerKey)
			assert.Equal(t, int64(1), total)
			if tc.ok {
				assert.Equal(t, int64(1), accepts, "status %d is a success", tc.status)
			} else {
				assert.Equal(t, int64(0), accepts, "status %d is a failure", tc.status)
			}
		})
	}
}

func TestHandler_ServeHTTP_implicitOK(t *testing.T) {
	base, reg, client := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	code, _, err := get(client, base+"/")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	accepts, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(1), accepts, "a handler that writes nothing answers 200")
	assert.Equal(t, int64(1), total)
}

func TestHandler_ServeHTTP_informationalThenFailure(t *testing.T) {
	base, reg, client := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	code, _, err := get(client, base+"/")
	require.NoError(t, err)
	assert.Equal(t, 500, code)
	accepts, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(0), accepts, "the final status counts, not 103 Early Hints")
	assert.Equal(t, int64(1), total)
}

func TestHandler_ServeHTTP_shedsWith503(t *testing.T) {
	a := &app{}
	base, reg, client := serveHandler(t, a, httpbreaker.WithRetryAfter(3*time.Second))
	shed, served := 0, 0
	for range 200 {
		resp, err := client.Get(base + "/status/500")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case 500:
			served++
			assert.Empty(t, resp.Header.Get("Retry-After"))
		case 503:
			shed++
			assert.Equal(t, "3", resp.Header.Get("Retry-After"))
			assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			assert.Equal(t, "503 Service Unavailable: the server is shedding load, retry later\n", string(body),
				"the body says nothing of the breaker's failure reasons")
		default:
			t.Fatalf("unexpected status %d", resp.StatusCode)
		}
	}
	assert.Greater(t, shed, 150, "a failing handler is shed")
	assert.Equal(t, int64(served), a.served.Load(), "a shed request never reaches the handler")
	_, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(served), total, "sheds are not recorded")
}

func TestHandler_ServeHTTP_withKey(t *testing.T) {
	a := &app{}
	route := func(r *http.Request) string { return strings.SplitN(r.URL.Path, "/", 3)[1] }
	base, reg, client := serveHandler(t, a, httpbreaker.WithKey(route))
	for range 100 {
		_, _, err := get(client, base+"/status/500")
		require.NoError(t, err)
	}
	for range 50 {
		code, body, err := get(client, base+"/other")
		require.NoError(t, err)
		assert.Equal(t, 200, code, "another route has its own breaker")
		assert.Equal(t, "ok", body)
	}
	accepts, total := reg.Totals("other")
	assert.Equal(t, int64(50), accepts)
	assert.Equal(t, int64(50), total)
	accepts, total = reg.Totals("status")
	assert.Equal(t, int64(0), accepts)
	assert.Less(t, total, int64(50), "the failing route was shed")
}

// recoverer runs next and hands what it panicked with to got.
func recoverer(next http.Handler, got chan<- any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { got <- recover() }()
		next.ServeHTTP(w, r)
	})
}

func TestHandler_ServeHTTP_panicIsFailureAndRaised(t *testing.T) {
	reg := newRegistry()
	var classified error
	h := httpbreaker.MustNewHandler(&app{}, httpbreaker.WithBreakers(reg.Get),
		httpbreaker.WithClassifier(func(req *http.Request, resp *http.Response, err error) httpbreaker.Outcome {
			classified = err
			return httpbreaker.ServerClassifier(req, resp, err)
		}))
	got := make(chan any, 1)
	base := serve(t, recoverer(h, got))
	_, _, err := get(http.DefaultClient, base+"/panic/kaboom")
	require.NoError(t, err, "the recoverer answers 200")
	assert.Equal(t, "kaboom", <-got, "the same value is raised again")
	var perr *httpbreaker.PanicError
	require.ErrorAs(t, classified, &perr, "the classifier sees a *PanicError")
	assert.Equal(t, "kaboom", perr.Value)
	assert.EqualError(t, perr, "httpbreaker: handler panicked: kaboom")
	accepts, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

func TestHandler_ServeHTTP_abortHandler(t *testing.T) {
	// net/http closes the connection and logs nothing for
	// http.ErrAbortHandler; the breaker must not change that.
	reg := newRegistry()
	classified := make(chan error, 1)
	h := httpbreaker.MustNewHandler(&app{}, httpbreaker.WithBreakers(reg.Get),
		httpbreaker.WithClassifier(func(req *http.Request, resp *http.Response, err error) httpbreaker.Outcome {
			classified <- err
			return httpbreaker.ServerClassifier(req, resp, err)
		}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var logs bytes.Buffer
	var logMu sync.Mutex
	srv := &http.Server{Handler: h, ErrorLog: log.New(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), "", 0)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	_, _, err = get(http.DefaultClient, "http://"+ln.Addr().String()+"/panic/abort")
	require.Error(t, err, "the connection is closed without an answer")
	assert.ErrorIs(t, <-classified, http.ErrAbortHandler, "the classifier can tell an abort")
	<-reg.Reported()
	_, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(1), total)
	require.NoError(t, srv.Close())
	logMu.Lock()
	defer logMu.Unlock()
	assert.Empty(t, logs.String(), "net/http logs nothing for ErrAbortHandler")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestHandler_ServeHTTP_panicAfterClientLeftIsIgnored(t *testing.T) {
	reg := newRegistry()
	arrived := make(chan struct{})
	h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // the client goes away
		panic(http.ErrAbortHandler)
	}), httpbreaker.WithBreakers(reg.Get))
	got := make(chan any, 1)
	base := serve(t, recoverer(h, got))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
	require.NoError(t, err)
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, http.ErrAbortHandler, <-got)
	_, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(0), total)
	assert.Equal(t, int64(1), reg.Ignored(httpbreaker.DefaultHandlerKey), "the client left: recorded as neither")
}

func TestHandler_ServeHTTP_flushStreams(t *testing.T) {
	next := make(chan struct{})
	base, reg, client := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		if !assert.True(t, ok, "the writer is still an http.Flusher") {
			return
		}
		_, _ = io.WriteString(w, "first\n")
		f.Flush()
		<-next // the client has read the first line, so the flush went out
		_, _ = io.WriteString(w, "second\n")
		assert.NoError(t, http.NewResponseController(w).Flush())
		// Features reached through Unwrap.
		assert.NoError(t, http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute)))
	}))
	resp, err := client.Get(base + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "first\n", line)
	close(next)
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Equal(t, "second\n", string(rest))
	accepts, _ := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(1), accepts)
}

func TestHandler_ServeHTTP_hijack(t *testing.T) {
	base, reg, _ := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if !assert.NoError(t, err) {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		_ = rw.Flush()
	}))
	code, body, err := get(http.DefaultClient, base+"/")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	assert.Equal(t, "hijacked", body)
	// The client can read the answer before the handler returns.
	waitFor(t, reg, func() bool { _, total := reg.Totals(httpbreaker.DefaultHandlerKey); return total > 0 }, "the record")
	accepts, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(1), accepts)
	assert.Equal(t, int64(1), total)
	assert.Equal(t, int64(1), reg.Answered(httpbreaker.DefaultHandlerKey), "answered when it hijacked")
}

func TestHandler_ServeHTTP_readFrom(t *testing.T) {
	base, _, client := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rf, ok := w.(io.ReaderFrom)
		if !assert.True(t, ok) {
			return
		}
		_, err := rf.ReadFrom(strings.NewReader("copied"))
		assert.NoError(t, err)
	}))
	code, body, err := get(client, base+"/")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	assert.Equal(t, "copied", body)
}

func TestHandler_ServeHTTP_classifierPanicIsFailure(t *testing.T) {
	reg := newRegistry()
	h := httpbreaker.MustNewHandler(&app{}, httpbreaker.WithBreakers(reg.Get),
		httpbreaker.WithClassifier(func(*http.Request, *http.Response, error) httpbreaker.Outcome { panic("classifier bug") }))
	got := make(chan any, 1)
	base := serve(t, recoverer(h, got))
	_, _, err := get(http.DefaultClient, base+"/")
	require.NoError(t, err)
	assert.Equal(t, "classifier bug", <-got)
	accepts, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

func TestHandler_ServeHTTP_concurrent(t *testing.T) {
	a := &app{}
	reg := newRegistry(breaker.WithK(1000)) // never sheds
	h := httpbreaker.MustNewHandler(a, httpbreaker.WithBreakers(reg.Get))
	base := serve(t, h)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	const goroutines, calls = 8, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				status := 200
				if (g+i)%5 == 0 {
					status = 503
				}
				code, _, err := get(client, fmt.Sprintf("%s/status/%d", base, status))
				assert.NoError(t, err)
				assert.Equal(t, status, code)
			}
		}()
	}
	wg.Wait()
	accepts, total := reg.Totals(httpbreaker.DefaultHandlerKey)
	assert.Equal(t, int64(goroutines*calls), total)
	assert.Equal(t, int64(goroutines*calls*4/5), accepts)
	assert.Equal(t, int64(goroutines*calls), a.served.Load())
}

func TestNewHandler_invalid(t *testing.T) {
	for _, tc := range []struct {
		next http.Handler
		opt  httpbreaker.HandlerOption
		want string
	}{
		{nil, httpbreaker.WithRetryAfter(time.Second), "httpbreaker: invalid option: NewHandler(nil): handler must not be nil"},
		{&app{}, httpbreaker.WithRegistry((*breaker.Registry)(nil)),
			"httpbreaker: invalid option: WithRegistry(nil): registry must not be nil"},
		{&app{}, httpbreaker.WithKey(nil), "httpbreaker: invalid option: WithKey(nil): key function must not be nil"},
		{&app{}, httpbreaker.WithRetryAfter(0),
			"httpbreaker: invalid option: WithRetryAfter(0s): must be a whole number of seconds, at least 1s"},
		{&app{}, httpbreaker.WithRetryAfter(1500 * time.Millisecond),
			"httpbreaker: invalid option: WithRetryAfter(1.5s): must be a whole number of seconds, at least 1s"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			h, err := httpbreaker.NewHandler(tc.next, tc.opt)
			assert.Nil(t, h)
			assert.True(t, errors.Is(err, httpbreaker.ErrInvalidOption))
			assert.EqualError(t, err, tc.want)
			assert.PanicsWithValue(t, tc.want, func() { httpbreaker.MustNewHandler(tc.next, tc.opt) })
		})
	}
}

// Issue 11: with clients that give up, a handler that answers 500 because
// its request's context ended turned every shed into more failures.
func TestHandler_ServeHTTP_answerAfterClientLeftIsIgnored(t *testing.T) {
	const clients = 20
	for _, status := range []int{http.StatusInternalServerError, http.StatusOK} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			reg := newRegistry()
			arrived := make([]chan struct{}, clients) // by client, each closed when its request arrives
			for i := range arrived {
				arrived[i] = make(chan struct{})
			}
			h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
				close(arrived[i])
				<-r.Context().Done() // the client gives up
				w.WriteHeader(status)
			}), httpbreaker.WithBreakers(reg.Get))
			finished := make(chan struct{}, clients)
			base := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer func() { finished <- struct{}{} }()
				h.ServeHTTP(w, r)
			}))
			var wg sync.WaitGroup
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprint(base, "/", i), nil)
					assert.NoError(t, err)
					go func() { <-arrived[i]; cancel() }()
					_, err = http.DefaultClient.Do(req)
					assert.ErrorIs(t, err, context.Canceled)
				}()
			}
			wg.Wait()
			for range clients {
				<-finished
			}
			accepts, total := reg.Totals(httpbreaker.DefaultHandlerKey)
			assert.Equal(t, int64(0), total, "recorded as a success or a failure")
			assert.Equal(t, int64(0), accepts)
			// A request that waited for room in the overload limit gave its
			// first promise up, and took another once let in.
			c := reg.CountsFor(httpbreaker.DefaultHandlerKey)
			assert.GreaterOrEqual(t, c.Ignores.Load(), int64(clients))
			assert.Equal(t, c.Admitted.Load(), c.Ignores.Load(), "the clients left: every promise neither")
			s := reg.Registry.Get(httpbreaker.DefaultHandlerKey).Stats()
			assert.Equal(t, int64(0), s.TotalFailures)
		})
	}
}

// TestHandler_ServeHTTP_classifierSeesStatus: the response a Handler's
// classifier is given has the status line the handler's code makes: its
// text for the codes net/http names, the code alone for others.
func TestHandler_ServeHTTP_classifierSeesStatus(t *testing.T) {
	for _, tc := range []struct {
		write  int // 0: the handler writes nothing
		status string
	}{{0, "200 OK"}, {204, "204 No Content"}, {503, "503 Service Unavailable"}, {299, "299 "}, {799, "799 "}} {
		var got *http.Response
		h := httpbreaker.MustNewHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if tc.write != 0 {
				w.WriteHeader(tc.write)
			}
		}), httpbreaker.WithRegistry(breaker.MustNewRegistry()),
			httpbreaker.WithClassifier(func(_ *http.Request, resp *http.Response, _ error) httpbreaker.Outcome {
				got = resp
				return httpbreaker.Success
			}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		require.NotNil(t, got, "code %d", tc.write)
		assert.Equal(t, tc.status, got.Status, "code %d", tc.write)
		assert.Equal(t, max(tc.write, 200), got.StatusCode)
	}
}
