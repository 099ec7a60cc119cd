package httpbreaker

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// responseWriter passes everything on to the writer it wraps and notes the
// status of the response. A handler uses it from one goroutine at a time,
// as it does any ResponseWriter.
type responseWriter struct {
	http.ResponseWriter
	status int         // the final status written; 0 until one is
	advice retryAdvice // RetryHeader's value for a 5xx status, if any
	// advised is set when the writer added RetryHeader to a 5xx answer
	// whose handler had not: the classifier does not see it.
	advised bool
	marked  bool // the call was marked answered
	// ctx is the handler's context, whose Mark tells whether a guarded
	// call failed: a 5xx that follows one gets RetryHeader too (see
	// serverside.Chained).
	ctx chain.Context
	req http.Request // the request the handler serves, in ctx: no allocation of its own

	// p is the promise the call is recorded on when the handler returns:
	// the breaker's, until the first Flush or Hijack marks the call
	// answered (see answered), then the one that returned.
	p srebreaker.Promise
	// slot is the request's room in the overload limit, given back when
	// the call is answered or returns; the zero Slot without a limit.
	slot serverside.Slot
}

// retryAdvice is the RetryHeader a 5xx answer of a served request gets, held
// in a byte: the writer, which holds the request's context and its copy
// of the request too, is allocated for every request, and at 512 bytes
// or less it is allocated without a header of its type (see
// TestResponseWriter_size).
type retryAdvice uint8

const (
	noAdvice    retryAdvice = iota // no RetryHeader
	adviseLater                    // serverside.RetryLater
	adviseNo                       // serverside.RetryNo
)

// adviceOf returns the advice of a RetryHeader value the server side
// gives: "" (none), serverside.RetryLater or serverside.RetryNo.
func adviceOf(v string) retryAdvice {
	switch v {
	case "":
		return noAdvice
	case serverside.RetryNo:
		return adviseNo
	}
	return adviseLater
}

// String returns a's RetryHeader value, "" for none.
func (a retryAdvice) String() string {
	switch a {
	case adviseLater:
		return serverside.RetryLater
	case adviseNo:
		return serverside.RetryNo
	}
	return ""
}

// answered marks the call answered, the first time the handler's answer
// goes out before it returns: at the first Flush of a stream (server-sent
// events, a long download) or when it takes the connection over (a
// WebSocket). The handler may then go on for as long as its client stays:
// the call is no longer one that has not come back. Its outcome is still
// recorded when the handler returns.
func (w *responseWriter) answered() {
	if w.marked {
		return
	}
	w.marked = true
	w.releaseSlot(w.status < 500)                                      // a stream holds no room once answered
	if a, ok := w.p.(interface{ Answered() srebreaker.Promise }); ok { // a promise of package breaker's breakers
		w.p = a.Answered()
	}
}

// releaseSlot gives the request's room in the overload limit back, once;
// served tells whether the handler answered without failing (see
// serverside.Slot.Release).
func (w *responseWriter) releaseSlot(served bool) {
	w.slot.Release(served)
	w.slot = serverside.Slot{}
}

// note records that the response started with status code, unless it
// already had. Informational 1xx statuses other than 101 Switching
// Protocols are not final and are not noted.
func (w *responseWriter) note(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
}

func (w *responseWriter) WriteHeader(code int) {
	if code >= 500 && w.status == 0 {
		advice := w.advice.String() // the server's breaker is shedding: see RetryHeader
		if _, down := w.ctx.Mark().Down(); down {
			advice = serverside.DependencyAdvice(advice) // a dependency failed: see serverside.Chained
		}
		if advice != "" {
			h := w.Header()
			_, forwarded := h[RetryHeader]
			w.advised = !forwarded
			h.Set(RetryHeader, advice)
		}
	}
	w.note(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.note(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// ReadFrom keeps the wrapped writer's io.ReaderFrom (sendfile) fast path.
func (w *responseWriter) ReadFrom(r io.Reader) (int64, error) {
	w.note(http.StatusOK)
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{w.ResponseWriter}, r)
}

// writerOnly hides every method but Write, so that io.Copy does not call
// ReadFrom again.
type writerOnly struct{ io.Writer }

// Flush implements http.Flusher; it does nothing when the wrapped writer
// cannot flush.
func (w *responseWriter) Flush() {
	_ = w.FlushError()
}

// FlushError is what http.ResponseController.Flush calls: it reports
// http.ErrNotSupported when the wrapped writer cannot flush.
func (w *responseWriter) FlushError() error {
	w.note(http.StatusOK)
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if err == nil {
		w.answered()
	}
	return err
}

// Hijack implements http.Hijacker. A hijacked connection belongs to the
// handler; the call is recorded then, unless it wrote a status first with
// 101 Switching Protocols.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.note(http.StatusSwitchingProtocols)
		w.answered()
	}
	return conn, rw, err
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// response describes what the handler wrote, for the classifier: a handler
// that wrote nothing gets 200 OK from net/http. It is called once, as the
// call is recorded.
func (w *responseWriter) response(r *http.Request) http.Response {
	code := w.status
	if code == 0 {
		code = http.StatusOK
	}
	header := w.Header()
	if w.advised { // the Handler's advice, not the handler's answer
		header = header.Clone()
		header.Del(RetryHeader)
	}
	return http.Response{
		Status:     statusLine(code),
		StatusCode: code,
		Proto:      r.Proto,
		ProtoMajor: r.ProtoMajor,
		ProtoMinor: r.ProtoMinor,
		Header:     header,
		Request:    r,
	}
}

// statusLines are the Status lines of the codes net/http names ("200
// OK"), made once rather than for every call recorded.
var statusLines = func() (lines [600]string) {
	for code := range lines {
		if text := http.StatusText(code); text != "" {
			lines[code] = strconv.Itoa(code) + " " + text
		}
	}
	return lines
}()

// statusLine is an http.Response's Status for code, as net/http's client
// writes it: the code and its text.
func statusLine(code int) string {
	if code >= 0 && code < len(statusLines) && statusLines[code] != "" {
		return statusLines[code]
	}
	return strconv.Itoa(code) + " " + http.StatusText(code)
}
