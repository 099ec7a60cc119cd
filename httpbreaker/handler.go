package httpbreaker

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// Handler is an [http.Handler] that sheds load: it passes a request to the
// handler it wraps only if the breaker for the request's key admits it, and
// records on that breaker how the wrapped handler did. Make one with
// [NewHandler].
//
// A request is served at the level the Handler's [CriticalityPolicy] gives
// it: by default [criticality.Default] for every request, whatever
// its [CriticalityHeader] claims, since anyone may send that header; with
// [TrustHeader] the header's level, capped; with [LevelFunc] the server's
// choice. When the breaker sheds, it sheds the lowest levels first. The
// wrapped handler gets the level in the request's context (see
// [criticality.From]), so that a [Transport] it calls through passes
// it on, and a CriticalityHeader in the request it gets says that level: a
// claim of it alone is left as it is, any other is rewritten to it, or
// removed for the default, so that a handler that forwards headers (a
// reverse proxy) does not pass on a claim the policy did not believe. A request
// with a level whose client has already gone when it is asked about gets
// no answer and records nothing.
//
// A shed request gets 503 Service Unavailable with a Retry-After header,
// a [RetryHeader] with the Handler's advice on retrying ("no" once most of
// what it sheds is already a retry, as the Srebreaker-Attempt request
// header numbers them; "later" otherwise), and a short plain-text body; the
// wrapped handler never sees it, and nothing about the breaker's failure
// reasons is sent to the client. A 5xx answer of a request served while
// the breaker sheds carries the RetryHeader too, so that a client's
// [Transport] leaves it out of its own breaker's counts.
//
// A request the breaker admits then passes the Handler's overload limit
// (on by default; see [WithOverloadLimit] and docs/guide/overload.md): it
// lets a learned number of requests into the wrapped handler at once and
// queues the rest by level, the highest going in first. While requests
// arrive faster than the handler serves them, the queue is kept short and
// a request it has no room for, the lowest level's first, gets 503 with
// Retry-After, the RetryHeader advice and [OverloadHeader], before the
// wrapped handler runs and without its body read; a [Transport] counts
// that answer as a failure. A request whose client goes while it waits
// leaves the queue. A request holds its room until the handler returns,
// or answers a stream (its first Flush or Hijack).
//
// A request whose handler made a guarded call with the request's context
// (through a [Transport], grpcbreaker's or connectbreaker's client
// interceptors, sqlbreaker, goredisbreaker, or a breaker's methods that
// take a context) that failed, was dropped, or was answered by a shedding
// server, and that then fails, counts as neither on the Handler's breaker:
// the breaker of that call, nearer the failure, throttles it. Its 5xx
// carries the RetryHeader ("later", or the Handler's advice while it
// sheds), so that every client breaker up the chain counts it as neither
// too. A panic, and a failure with no failed call behind it, still count.
//
// While the requests it served have failed, several in a row with no
// success since (a dependency that looks down), the Handler serves the
// 40th request in a row that its breaker drops all the same, as a probe,
// whose outcome the breaker does not see (it counted a drop); once a probe
// succeeds, it serves the requests the breaker drops until one fails,
// while the breaker, which admits some of them, sees the dependency heal.
// A dependency that serves some requests is left to the breaker alone.
//
// A request is recorded when the wrapped handler returns, as its status
// or its panic says. A handler that streams is marked answered when its
// answer first goes out: at its first Flush (server-sent events, a long
// download) or when it hijacks the connection (a WebSocket). The breaker
// then no longer follows it as a call in flight, so that it may go on for
// as long as its client stays without being counted against the server
// as a call that does not come back (see [breaker.WithSlowCall]); how it
// ends is still recorded when it returns: a panic after its first Flush
// is a failure, a client that went away neither. A handler that holds a
// request before it answers (a long poll) is out until it answers, and
// counts against the server once out for much longer than its requests
// take: give such routes a breaker of their own ([WithKey]).
//
// A panic in the wrapped handler is recorded (a failure by default) and
// raised again with the same value, so that net/http's handling of it, and
// of [http.ErrAbortHandler] in particular, is unchanged (panic(nil) under
// GODEBUG panicnil=1 too). A request whose client went away before the
// handler finished (its context canceled) counts as neither a success nor
// a failure with the default [ServerClassifier], whatever was answered.
//
// The wrapped handler gets a [http.ResponseWriter] that notes the status it
// writes. It implements [http.Flusher], [http.Hijacker] and [io.ReaderFrom]
// by passing the calls on, and has an Unwrap method, so
// [http.ResponseController] reaches the original writer's other features.
// Hijack returns [http.ErrNotSupported] when the original writer cannot be
// hijacked, as on HTTP/2.
//
// A Handler is safe for concurrent use by multiple goroutines.
type Handler struct {
	next       http.Handler
	breakers   func(key string) breaker.Breaker
	key        func(*http.Request) string
	classifier Classifier // nil for ServerClassifier, called directly
	retryAfter []string   // the Retry-After header's value, in seconds
	policy     CriticalityPolicy
	limit      bool                // the overload limit is on
	clock      clock.Clock         // the overload limit's; nil for the system clock
	memories   serverside.Memories // per key
}

// NewHandler returns a Handler that wraps next. It returns an error
// wrapping [ErrInvalidOption] when next is nil or an option is invalid.
func NewHandler(next http.Handler, opts ...HandlerOption) (*Handler, error) {
	o, err := handlerOptions(opts)
	if err != nil {
		return nil, err
	}
	if next == nil {
		return nil, errNilHandler
	}
	h := &Handler{
		next:       next,
		breakers:   o.get,
		key:        o.key,
		retryAfter: []string{strconv.FormatInt(int64(o.retryAfter/time.Second), 10)},
		policy:     o.criticality,
		limit:      o.limit,
	}
	if o.classified {
		h.classifier = o.classifier
	}
	return h, nil
}

// errNilHandler is NewHandler's error for a nil handler.
var errNilHandler = &invalidError{"NewHandler(nil): handler must not be nil"}

// invalidError is an ErrInvalidOption with a fixed text.
type invalidError struct{ text string }

func (e *invalidError) Error() string { return ErrInvalidOption.Error() + ": " + e.text }
func (e *invalidError) Unwrap() error { return ErrInvalidOption }

// MustNewHandler is like [NewHandler] but panics, with the message
// NewHandler would return, when next is nil or an option is invalid.
func MustNewHandler(next http.Handler, opts ...HandlerOption) *Handler {
	h, err := NewHandler(next, opts...)
	if err != nil {
		panic(err.Error())
	}
	return h
}

// shedBody is the body of a shed request's response.
const shedBody = "503 Service Unavailable: the server is shedding load, retry later\n"

// The headers' values and the bodies of the Handler's own answers, made
// once: a shed or rejected request costs no allocation of the Handler's
// (BenchmarkHandler_ServeHTTP_rejected). The values are set in the header
// map by their canonical keys, as Header.Set would, and shared by every
// answer; Header.Add copies a value before it appends.
var (
	plainText       = []string{"text/plain; charset=utf-8"}
	noSniff         = []string{"nosniff"}
	retryLaterValue = []string{RetryLater}
	retryNoValue    = []string{RetryNo}
	shedBytes       = []byte(shedBody)
	overloadBytes   = []byte(overloadBody)
)

// retryValue is the RetryHeader value of advice, RetryLater or RetryNo.
func retryValue(advice string) []string {
	if advice == RetryNo {
		return retryNoValue
	}
	return retryLaterValue
}

// answer writes the Handler's own 503 answer: Retry-After, advice as its
// RetryHeader, and body; overloaded adds OverloadHeader.
func (h *Handler) answer(w http.ResponseWriter, advice string, overloaded bool, body []byte) {
	hdr := w.Header()
	hdr["Retry-After"] = h.retryAfter
	hdr[RetryHeader] = retryValue(advice)
	if overloaded {
		hdr[OverloadHeader] = overloadValue
	}
	hdr["Content-Type"] = plainText
	hdr["X-Content-Type-Options"] = noSniff
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	attempt := AttemptOf(r)
	key := h.key(r)
	ov := h.memories.Of(key)
	b := h.breakers(key)
	ctx, level, reclaim, p, err := admit(b, r, h.policy)
	probe := false
	if err != nil {
		if gone(err) { // nothing to answer, and nothing to record
			return
		}
		if probe = ov.Probe(); !probe {
			h.shed(w, ov.Shedding(attempt))
			return
		}
		p = serverside.Probe{}
	}

	var slot serverside.Slot
	if h.limit { // a probe too takes its room: it is the server's work
		// A request that waits for room takes its promise again once let
		// in: the wait is the server's load, no hang of its dependency.
		// Not served, a request says nothing of the dependency: its
		// promise is given up.
		slot, p, err = ov.Limiter(b, h.clock).AcquireFor(ctx, level, b, p, probe)
		switch {
		case err == nil:
		case err == serverside.ErrOverloaded:
			h.reject(w, ov.Rejecting(attempt))
			return
		case gone(err):
			return // the client has gone: nothing to answer
		default: // dropped by the breaker as it was let in (AllowCtx told a tracer)
			h.shed(w, ov.Shedding(attempt))
			return
		}
	}
	var advice string
	if probe {
		advice = ov.Advice()
	} else {
		advice = ov.Served(attempt)
	}
	var header http.Header // the request served has r's own
	if reclaim {
		header = claimHeader(r.Header, level)
	}
	if h.serve(ctx, level, ov, p, slot, w, r, header, advice) {
		panic(nil) // raised again: see serve
	}
}

// shed answers a request the breaker dropped: 503 with a Retry-After and
// advice as its RetryHeader.
func (h *Handler) shed(w http.ResponseWriter, advice string) {
	h.answer(w, advice, false, shedBytes)
}

// overloadBody is the body of the response to a request the overload
// limit rejected.
const overloadBody = "503 Service Unavailable: the server is overloaded, retry later\n"

// reject answers a request the overload limit rejected: 503 with a
// Retry-After, advice as its RetryHeader, and OverloadHeader, so that a
// client's breaker counts it.
func (h *Handler) reject(w http.ResponseWriter, advice string) {
	h.answer(w, advice, true, overloadBytes)
}

// serve runs the wrapped handler for an admitted request (or a probe)
// in a context of its own, derived from ctx, that holds the request's
// chain.Mark and carries level, the level it is served at (nothing of its
// own for the default), with header in place of r's when not nil (see claimHeader),
// holding slot, its room in the overload limit, until it is answered, and
// records the outcome on p, and in ov, the memory of its key, when the
// handler returns; a stream's first Flush or Hijack marks the call
// answered before (see responseWriter.answered), and its outcome is then
// recorded on the promise that returned. advice, when not empty, is set
// as the RetryHeader of a 5xx answer. A panic is recorded, and goes on.
// recover returns nil for runtime.Goexit, which goes on, and for
// panic(nil) under GODEBUG panicnil=1, which it stops: serve then returns
// true, and only then, for ServeHTTP to raise it again.
func (h *Handler) serve(ctx context.Context, level criticality.Level, ov *serverside.Overload,
	p srebreaker.Promise, slot serverside.Slot, w http.ResponseWriter, r *http.Request, header http.Header,
	advice string) (nilPanic bool) {
	rw := &responseWriter{ResponseWriter: w, advice: adviceOf(advice), slot: slot}
	ctx, m := rw.ctx.Init(ctx, level) // the writer holds the request's context, its level too
	rw.req = *r.WithContext(ctx)      // and the request's copy: one allocation for all three
	if header != nil {
		rw.req.Header = header
	}
	r = &rw.req
	rw.slot.Hold(m)   // no room held while the handler waits on a guarded call
	rw.p = m.Watch(p) // nor is it out for the breaker: see chain.Mark.Watch
	returned := false
	defer func() {
		if returned {
			return
		}
		rw.releaseSlot(false)
		v := recover()
		switch {
		case v == nil:
			if errors.Is(r.Context().Err(), context.Canceled) {
				srebreaker.Ignore(rw.p) // the client had gone away
			} else {
				rw.p.Reject("handler exited without returning (runtime.Goexit, or panic(nil) with GODEBUG panicnil=1)")
			}
		default:
			h.finish(ov, rw.p, r, rw, &PanicError{Value: v})
		}
		if v == nil {
			nilPanic = true
			return
		}
		// Raised again from this deferred call, so that the stack net/http
		// logs still holds the handler's frames.
		panic(v)
	}()
	h.next.ServeHTTP(rw, r)
	returned = true
	// A failure's latency says nothing of the load, nor does that of a
	// request whose client left: it may have ended early.
	rw.releaseSlot(rw.status < http.StatusInternalServerError && r.Context().Err() == nil)
	h.finish(ov, rw.p, r, rw, nil)
	return false
}

// finish classifies the call and records it on p and in ov. A panic in the classifier
// is recorded as a failure and goes on up. The default classifier is
// called directly, so that the response it reads needs no allocation.
func (h *Handler) finish(ov *serverside.Overload, p srebreaker.Promise, r *http.Request, rw *responseWriter, err error) {
	resp := rw.response(r)
	var o Outcome
	if h.classifier == nil {
		o = ServerClassifier(r, &resp, err)
	} else {
		o = h.classify(p, r, resp, err)
	}
	if err == nil { // a panic is the server's own
		o = chained(o, rw.ctx.Mark())
	}
	record(p, o, &resp, err)
	_, isProbe := p.(serverside.Probe)
	ov.Finished(outcomeOf(o), isProbe)
}

// classify asks the Handler's own classifier about the call, with a copy
// of resp it may keep. A panic in it is recorded on p as a failure and
// goes on up.
func (h *Handler) classify(p srebreaker.Promise, r *http.Request, resp http.Response, err error) Outcome {
	classified := false
	defer func() {
		if !classified {
			p.Reject("classifier panicked")
		}
	}()
	o := h.classifier(r, &resp, err)
	classified = true
	return o
}
