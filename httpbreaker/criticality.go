package httpbreaker

import (
	"context"
	"errors"
	"net/http"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// CriticalityHeader is the request header that carries a call's
// [breaker.Criticality] from a [Transport] to a [Handler]: one of
// CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS or SHEDDABLE, the names
// [breaker.Criticality.String] gives.
//
// A Transport sets it from the request's context (see
// [breaker.WithCriticality]) when the level there is not
// [breaker.DefaultCriticality]; it leaves the header as the request has it
// otherwise, so a caller may also set it by hand. A Handler reads it, in
// any case; a request without it, or with a value that is not a level, is
// served at the default level, never refused for it.
const CriticalityHeader = "X-Request-Criticality"

// withCriticality returns req with the CriticalityHeader set to c, on a
// copy: a RoundTripper must not change the request it is given.
func withCriticality(req *http.Request, c breaker.Criticality) *http.Request {
	r := new(http.Request)
	*r = *req
	r.Header = req.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set(CriticalityHeader, c.String())
	return r
}

// requestCriticality returns the level r's CriticalityHeader names, or the
// default.
func requestCriticality(r *http.Request) breaker.Criticality {
	v := r.Header.Get(CriticalityHeader)
	if v == "" {
		return breaker.DefaultCriticality
	}
	c, err := breaker.ParseCriticality(v)
	if err != nil {
		return breaker.DefaultCriticality
	}
	return c
}

// admit asks b about r at the level its CriticalityHeader names. Above or
// below the default level, r's context gets the level too, so that the
// calls the handler makes carry it on; the returned request is the one to
// serve. A request whose client went away before it was admitted returns
// the context's error.
func admit(b breaker.Breaker, r *http.Request) (*http.Request, srebreaker.Promise, error) {
	c := requestCriticality(r)
	if c == breaker.DefaultCriticality {
		p, err := b.Allow()
		return r, p, err
	}
	r = r.WithContext(breaker.WithCriticality(r.Context(), c))
	p, err := b.AllowCtx(r.Context())
	return r, p, err
}

// gone reports whether err says the client went away rather than that the
// breaker shed the request.
func gone(err error) bool {
	return !errors.Is(err, breaker.ErrServiceUnavailable) &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
