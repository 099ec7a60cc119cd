package httpbreaker

import (
	"context"
	"errors"
	"net/http"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/drophook"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// CriticalityHeader is the request header that carries a call's
// [criticality.Level] from a [Transport] to a [Handler]: one of
// CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS or SHEDDABLE, the names
// [criticality.Level.String] gives.
//
// A Transport sets it from the request's context (see
// [criticality.With]) when the level there is not
// [criticality.Default]; it leaves the header as the request has it
// otherwise, so a caller may also set it by hand. A Handler believes it
// only when its [CriticalityPolicy] says so ([TrustHeader]): by default it
// ignores it.
const CriticalityHeader = "X-Request-Criticality"

// CriticalityPolicy decides the level a [Handler] serves a request at, and
// so whether a client's [CriticalityHeader] counts: set it with
// [WithCriticalityPolicy]. Make one with [IgnoreHeader], [TrustHeader] or
// [LevelFunc]; the zero value is IgnoreHeader's, the default.
//
// Criticality is meant to be set where a request enters the system, by the
// server (by route, by authenticated caller), and carried on only between
// services that trust each other: a client that could name its own level
// would claim the highest and be served first when the server sheds. Which
// to pick where:
//
//	the Handler is reached by              policy
//	anyone; every request alike            IgnoreHeader() (the default)
//	anyone; the server knows the level     LevelFunc(f): by route, by authenticated caller
//	only services that trust each other    TrustHeader(criticality.CriticalPlus)
//	trusted services, none above CRITICAL  TrustHeader(criticality.Critical)
//
// docs/guide/criticality.md says more.
type CriticalityPolicy struct {
	p serverside.Policy[*http.Request]
}

// IgnoreHeader returns the policy a [Handler] has by default: every
// request is served at [criticality.Default], whatever its
// [CriticalityHeader] says. It is the one for a server that anyone can
// reach.
func IgnoreHeader() CriticalityPolicy { return CriticalityPolicy{} }

// TrustHeader returns a policy that serves a request at the level its
// [CriticalityHeader] names, capped at max: a request that claims more is
// served at max, never refused for it. A request without the header, or
// with a value that is not a level, is at [criticality.Default],
// capped at max too, so that no request is served above max. It is the one
// for a server that only services trusting each other reach (behind the
// edge, on a private network, behind a proxy that sets or strips the
// header). max must be one of the four levels; [NewHandler] refuses it
// otherwise.
func TrustHeader(max criticality.Level) CriticalityPolicy {
	return CriticalityPolicy{serverside.Trust[*http.Request](max)}
}

// LevelFunc returns a policy that serves a request at the level f gives:
// the server decides, by route or by authenticated caller, and may read
// the header itself for some callers (with a TrustHeader policy's
// [CriticalityPolicy.Level]). A value that is not one of the four levels
// is taken as [criticality.Default]. f must not be nil, and may be
// called from many goroutines at once; a panic in it goes on up, and
// nothing is recorded.
func LevelFunc(f func(r *http.Request) criticality.Level) CriticalityPolicy {
	return CriticalityPolicy{serverside.Decided(f)}
}

// Level returns the level p serves r at: always one of the four levels,
// [criticality.Default] for a policy [NewHandler] would refuse.
func (p CriticalityPolicy) Level(r *http.Request) criticality.Level {
	return p.p.Level(r, headerCriticality)
}

// String describes p as the code that makes it, for error messages.
func (p CriticalityPolicy) String() string { return p.p.String("TrustHeader", "IgnoreHeader") }

// withCriticality returns req with the CriticalityHeader set to c
// (absent for the default), on a copy: a RoundTripper must not change the
// request it is given.
func withCriticality(req *http.Request, c criticality.Level) *http.Request {
	out := new(http.Request)
	*out = *req
	out.Header = claimHeader(req.Header, c)
	return out
}

// headerCriticality returns the level r's CriticalityHeader names, or the
// default. The header is read from the map by its canonical key, as
// Header.Get would find it, without canonicalizing the key every request.
func headerCriticality(r *http.Request) criticality.Level {
	if v := r.Header[CriticalityHeader]; len(v) > 0 {
		return serverside.Claimed(v[0])
	}
	return criticality.Default
}

// admit asks b about r at the level policy gives it, c. ctx is r's
// context: the request served gets the level in the context the Handler
// makes for it once it is let in (chain.Context), so that a request shed
// or rejected at a level costs no allocation. reclaim reports
// whether r carries a CriticalityHeader that the request served must not
// pass on as it is, one that does not name c alone (see claimHeader). A
// request whose client went away before it was admitted returns the
// context's error.
func admit(b breaker.Breaker, r *http.Request, policy CriticalityPolicy) (ctx context.Context,
	c criticality.Level, reclaim bool, _ srebreaker.Promise, _ error) {
	c, ctx = policy.Level(r), r.Context()
	v := r.Header[CriticalityHeader]
	reclaim = len(v) > 0 && (len(v) != 1 || v[0] != c.String())
	if c == criticality.Default {
		p, err := b.Allow()
		if err != nil {
			drophook.Dropped(b, ctx, err)
		}
		return ctx, c, reclaim, p, err
	}
	p, err := serverside.AllowAt(b, ctx, c)
	return ctx, c, reclaim, p, err
}

// claimHeader returns a copy of h whose CriticalityHeader says c, or is
// absent for the default: the header of a request served at c whose own
// claim was another, so that a handler that forwards the request's
// headers (a reverse proxy) does not pass on a claim the server did not
// believe. (A claim of c alone is passed on as it is: it says the level
// served, the default's too.) The Handler makes it only for a request it
// serves, whose copy it makes anyway.
func claimHeader(h http.Header, c criticality.Level) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	if c == criticality.Default {
		delete(out, CriticalityHeader)
	} else {
		out[CriticalityHeader] = []string{c.String()}
	}
	return out
}

// gone reports whether err says the client went away rather than that the
// breaker shed the request.
func gone(err error) bool {
	return !errors.Is(err, breaker.ErrServiceUnavailable) &&
		(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
