package httpbreaker

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// ErrInvalidOption is wrapped by the error [NewTransport] and [NewHandler]
// return for an invalid option; the full text names the option and what
// was wrong with it.
var ErrInvalidOption = errors.New("httpbreaker: invalid option")

// DefaultRetryAfter is the Retry-After a [Handler] sends with a shed
// request unless [WithRetryAfter] says otherwise.
const DefaultRetryAfter = time.Second

// DefaultHandlerKey names the one breaker a [Handler] uses unless
// [WithKey] says otherwise. It cannot be a host, which is what a
// [Transport]'s keys are by default, so that client and server breakers
// can share [breaker.DefaultRegistry]: tune it there with
// breaker.DefaultRegistry().Configure(httpbreaker.DefaultHandlerKey, …).
const DefaultHandlerKey = "server:http"

// Option configures a [Transport] or a [Handler]. Most options apply to
// both; [WithFallback] only to a Transport, [WithRetryAfter] and
// [WithCriticalityPolicy] only to a Handler, and giving one to the other is
// an error.
type Option func(*options)

// side tells which constructor applies the options.
type side = serverside.Side

const (
	clientSide = serverside.ClientSide
	serverSide = serverside.ServerSide
)

type options struct {
	registry      *breaker.Registry
	get           func(key string) breaker.Breaker // registry.Get, unless a test sets it
	key           func(*http.Request) string
	classifier    Classifier
	fallback      func(*http.Request, error) (*http.Response, error)
	fallbackSet   bool
	retryAfter    time.Duration
	retryAfterSet bool
	criticality   CriticalityPolicy
	policySet     bool
}

// newOptions applies opts over the defaults of s and validates them.
func newOptions(s side, opts []Option) (options, error) {
	o := options{registry: breaker.DefaultRegistry(), retryAfter: DefaultRetryAfter}
	if s == clientSide {
		o.key, o.classifier = hostKey, ClientClassifier
	} else {
		o.key, o.classifier = func(*http.Request) string { return DefaultHandlerKey }, ServerClassifier
	}
	for _, opt := range opts {
		opt(&o)
	}
	get, invalid := serverside.Breakers(o.registry, o.get, o.key != nil)
	switch {
	case invalid != "":
		return o, fmt.Errorf("%w: %s", ErrInvalidOption, invalid)
	case o.classifier == nil:
		return o, fmt.Errorf("%w: WithClassifier(nil): classifier must not be nil", ErrInvalidOption)
	case s == serverSide && o.fallbackSet:
		return o, fmt.Errorf("%w: WithFallback applies to a Transport, not to a Handler", ErrInvalidOption)
	case s == clientSide && o.retryAfterSet:
		return o, fmt.Errorf("%w: WithRetryAfter applies to a Handler, not to a Transport", ErrInvalidOption)
	case o.retryAfter < time.Second || o.retryAfter%time.Second != 0:
		return o, fmt.Errorf("%w: WithRetryAfter(%v): must be a whole number of seconds, at least 1s",
			ErrInvalidOption, o.retryAfter)
	}
	if invalid := o.criticality.p.Check(s, o.policySet, o.criticality.String(),
		"a Handler, not to a Transport: a Transport sends the level of the request's context"); invalid != "" {
		return o, fmt.Errorf("%w: %s", ErrInvalidOption, invalid)
	}
	o.get = get
	return o, nil
}

// hostKey is a Transport's default key: the URL's host, with its port if
// the URL has one.
func hostKey(req *http.Request) string {
	if req.URL != nil && req.URL.Host != "" {
		return req.URL.Host
	}
	return req.Host
}

// WithRegistry sets the registry the breakers come from, one per key.
// Default [breaker.DefaultRegistry], which grpcbreaker's interceptors also
// use: every
// Transport and Handler of the program shares it, so that one breaker
// guards a host however many clients call it, and an exporter given that
// registry reports them all. Give a registry of your own for breakers with
// other options ([breaker.NewRegistry]'s, or [breaker.Registry.Configure]
// per key) or to keep them apart from the rest. It must not be nil.
//
// Keys built from what the program does not control (hosts of URLs that
// users supply, paths clients send) are bounded by the registry: it keeps
// at most [breaker.DefaultLimit] breakers, [breaker.DefaultRegistry]
// included, unless [breaker.Registry.SetLimit] says otherwise, and forgets
// the least recently used of those that shed nothing first.
func WithRegistry(r *breaker.Registry) Option {
	return func(o *options) { o.registry = r }
}

// WithKey sets the function that names the breaker for a request: requests
// with the same key share a breaker. For a Transport the default is the
// URL's host with its port ("api.example.com", "127.0.0.1:8080"); host plus
// route, or a service name, are common choices. For a Handler the default
// is [DefaultHandlerKey], one breaker for every request the handler serves,
// because URL paths are chosen by clients and a breaker per path would let
// them grow the registry without bound; give a key with a bounded set of
// values, such as the route pattern (r.Pattern on Go 1.23 and later).
// Since Transports and Handlers share a registry by default, a Handler's
// keys should be ones no host can be: a pattern starts with a method or a
// slash, and a prefix such as "server:" does too. The function must not be
// nil, and may be called from many goroutines at once.
func WithKey(key func(req *http.Request) string) Option {
	return func(o *options) { o.key = key }
}

// WithClassifier sets the function that decides how a finished call is
// recorded. Default: [ClientClassifier] for a Transport and
// [ServerClassifier] for a Handler. It must not be nil.
func WithClassifier(c Classifier) Option {
	return func(o *options) { o.classifier = c }
}

// WithFallback sets a function that a [Transport] calls instead of
// returning the error for a dropped request. It receives the request (not
// sent; its body already closed) and the drop error, which matches
// [breaker.ErrServiceUnavailable]; what it returns is what RoundTrip
// returns, so it must return a non-nil response or a non-nil error, as a
// RoundTripper does. A response it returns belongs to the caller, who
// closes its body. Default: none; nil also means none. Transport only.
func WithFallback(fallback func(req *http.Request, err error) (*http.Response, error)) Option {
	return func(o *options) { o.fallback, o.fallbackSet = fallback, true }
}

// WithRetryAfter sets the Retry-After a [Handler] sends with a shed
// request. Default [DefaultRetryAfter] (1 s); it must be a whole number of
// seconds, at least one, since the header counts in seconds. Handler only.
func WithRetryAfter(d time.Duration) Option {
	return func(o *options) { o.retryAfter, o.retryAfterSet = d, true }
}

// WithCriticalityPolicy sets how a [Handler] finds the level it serves a
// request at (see [CriticalityPolicy], which says which policy to pick
// where). Default [IgnoreHeader]: every request at
// [criticality.Default], whatever its [CriticalityHeader] says, the
// one that is safe for a server anyone can reach. [TrustHeader] believes
// the header up to a level, for servers that only trusted services reach;
// [LevelFunc] lets the server decide. Handler only.
func WithCriticalityPolicy(p CriticalityPolicy) Option {
	return func(o *options) { o.criticality, o.policySet = p, true }
}
