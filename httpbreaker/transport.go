package httpbreaker

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
)

// Transport is an [http.RoundTripper] that sends a request only if the
// breaker for its key admits it, and records the outcome on that breaker.
// Make one with [NewTransport] and set it as an [http.Client]'s Transport:
//
//	client := &http.Client{Transport: httpbreaker.MustNewTransport(nil)}
//
// A dropped request is never sent. RoundTrip then closes the request body,
// as every RoundTripper must, and returns an error matching
// [breaker.ErrServiceUnavailable] whose text names the breaker and its last
// failure reasons, or what the [WithFallback] function returns. When the
// request's context is already done, RoundTrip returns the context's error
// and records nothing. A panic in the wrapped RoundTripper or in the
// classifier is recorded as a failure and raised again (panic(nil) under
// GODEBUG panicnil=1 too); the response body, when the classifier
// panicked, is closed first, since the caller never gets the response. A
// panic in the key function closes the request body and goes on.
//
// Responses pass through untouched: the Transport neither reads nor closes
// their bodies, which stay the caller's to close. [ResponseError] turns a
// failed one into an error that package retry honours.
//
// A request that is a retry, by the attempt number its context carries
// (see [retry.WithAttempt], set by [retry.Policy.Do]) or by its
// [AttemptHeader] ([PrepareRetry]), takes the retry from its breaker's
// budget first (see [retry.Budget]): when the budget is spent, RoundTrip
// closes the request body and returns an error matching
// [retry.ErrBudgetSpent], without sending the request or asking the
// breaker. A retry goes out with its attempt number in the AttemptHeader,
// on a copy of the request.
//
// The request's context may carry a [criticality.Level] (see
// [criticality.With]): the breaker then drops the lowest levels
// first, and the Transport sends the level in the [CriticalityHeader] of a
// copy of the request, unless it is the default.
//
// A Transport is safe for concurrent use by multiple goroutines.
type Transport struct {
	base       http.RoundTripper
	breakers   func(key string) breaker.Breaker
	key        func(*http.Request) string
	classifier Classifier
	fallback   func(*http.Request, error) (*http.Response, error)
}

// NewTransport returns a Transport that sends admitted requests through
// base, or through [http.DefaultTransport] when base is nil. It returns an
// error wrapping [ErrInvalidOption] when an option is invalid.
func NewTransport(base http.RoundTripper, opts ...TransportOption) (*Transport, error) {
	o, err := transportOptions(opts)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{base: base, breakers: o.get, key: o.key, classifier: o.classifier, fallback: o.fallback}, nil
}

// MustNewTransport is like [NewTransport] but panics, with the message
// NewTransport would return, when an option is invalid. It is meant for
// options written in code.
func MustNewTransport(base http.RoundTripper, opts ...TransportOption) *Transport {
	t, err := NewTransport(base, opts...)
	if err != nil {
		panic(err.Error())
	}
	return t
}

// RoundTrip implements [http.RoundTripper].
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	b := t.breakerFor(req)
	if err := takeRetry(req, b); err != nil {
		closeBody(req)
		return nil, err
	}
	p, err := b.AllowCtx(ctx)
	if err != nil {
		closeBody(req)
		if t.fallback != nil && errors.Is(err, breaker.ErrServiceUnavailable) {
			return t.fallback(req, err)
		}
		return nil, err
	}
	if c := criticality.From(ctx); c != criticality.Default {
		req = withCriticality(req, c)
	}
	req = withAttempt(req)
	nilPanic, resp, err := t.send(b, p, req)
	if nilPanic {
		panic(nil) // raised again: see send
	}
	return resp, err
}

// breakerFor returns the breaker for req's key. When the key function
// panics, it closes req's body, which no one else will, and the panic goes
// on.
func (t *Transport) breakerFor(req *http.Request) breaker.Breaker {
	returned := false
	defer func() {
		if !returned {
			closeBody(req)
		}
	}()
	b := t.breakers(t.key(req))
	returned = true
	return b
}

// send sends an admitted request and records its outcome on p. When the
// wrapped RoundTripper or the classifier panics, the call is recorded as a
// failure, the response body (if any) is closed, since the caller will
// never get it, and the panic goes on. recover returns nil for
// runtime.Goexit, which goes on, and for panic(nil) under GODEBUG
// panicnil=1, which it stops: nilPanic tells RoundTrip, which only returns
// in the second case, to raise it again.
func (t *Transport) send(b breaker.Breaker, p srebreaker.Promise, req *http.Request) (nilPanic bool, resp *http.Response, err error) {
	// The request this call is made for, if a guarded server serves it,
	// holds no room in that server's overload limit meanwhile.
	away := chain.Leave(req.Context())
	defer away.Return()
	recorded := false
	defer func() {
		if recorded {
			return
		}
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		v := recover()
		if v == nil {
			p.Reject("round trip exited without returning (runtime.Goexit, or panic(nil) with GODEBUG panicnil=1)")
			resp, err, nilPanic = nil, nil, true
			return
		}
		p.Reject(fmt.Sprint("panic: ", v))
		panic(v)
	}()
	resp, err = t.base.RoundTrip(req)
	o := t.classifier(req, resp, err)
	recorded = true
	if o == Failure && Overloaded(resp) { // a server with no room: see srebreaker.OverloadRejecter
		srebreaker.RejectOverloaded(p, failureReason(o, resp, err)+" (the server is overloaded)")
	} else {
		record(p, o, resp, err)
	}
	if o != Success && (o != Ignore || ShedByServer(resp)) {
		chain.Failed(req.Context(), b) // see package chain
	}
	return false, resp, err
}

// CloseIdleConnections closes the idle connections of the wrapped
// RoundTripper, if it has such a method; [http.Client.CloseIdleConnections]
// calls it.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// closeBody closes the body of a request that will not be sent.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
