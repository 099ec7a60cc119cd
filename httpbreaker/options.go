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

// DefaultHandlerKey names the one breaker a [Handler] uses unless
// [WithKey] says otherwise. It cannot be a host, which is what a
// [Transport]'s keys are by default, so that client and server breakers
// can share [breaker.DefaultRegistry]: tune it there with
// breaker.DefaultRegistry().Configure(httpbreaker.DefaultHandlerKey, …).
const DefaultHandlerKey = "server:http"

// Option configures a [Transport] or a [Handler]: it is both a
// [TransportOption] and a [HandlerOption]. [WithRegistry], [WithKey] and
// [WithClassifier] make one.
type Option func(*options)

// TransportOption configures a [Transport]: an [Option], or [WithFallback],
// which applies to a Transport only. A Handler's option does not compile
// where a TransportOption is wanted.
type TransportOption interface {
	transport(*options)
}

// HandlerOption configures a [Handler]: an [Option], or [WithRetryAfter]
// or [WithCriticalityPolicy], which apply to a Handler only. A
// Transport's option does not compile where a HandlerOption is wanted.
type HandlerOption interface {
	handler(*options)
}

func (f Option) transport(o *options) { f(o) }
func (f Option) handler(o *options)   { f(o) }

// transportOnly and handlerOnly are the options of one side.
type (
	transportOnly func(*options)
	handlerOnly   func(*options)
)

func (f transportOnly) transport(o *options) { f(o) }
func (f handlerOnly) handler(o *options)     { f(o) }

// side tells which constructor applies the options.
type side = serverside.Side

const (
	clientSide = serverside.ClientSide
	serverSide = serverside.ServerSide
)

type options struct {
	registry    *breaker.Registry
	get         func(key string) breaker.Breaker // registry.Get, unless a test sets it
	key         func(*http.Request) string
	classifier  Classifier
	classified  bool // WithClassifier was given: the classifier is not the default
	fallback    func(*http.Request, error) (*http.Response, error)
	retryAfter  time.Duration
	criticality CriticalityPolicy
	limit       bool // the Handler's overload limit is on: WithOverloadLimit
}

// newOptions applies opts over the defaults of s and validates them:
// apply applies one option, and reports false for a nil one.
func newOptions(s side, apply func(o *options) bool) (options, error) {
	o := options{registry: breaker.DefaultRegistry(), retryAfter: time.Second, limit: s == serverSide}
	if s == clientSide {
		o.key, o.classifier = hostKey, ClientClassifier
	} else {
		o.key, o.classifier = func(*http.Request) string { return DefaultHandlerKey }, ServerClassifier
	}
	if !apply(&o) {
		return o, fmt.Errorf("%w: a nil option was given", ErrInvalidOption)
	}
	get, invalid := serverside.Breakers(o.registry, o.get, o.key != nil)
	switch {
	case invalid != "":
		return o, fmt.Errorf("%w: %s", ErrInvalidOption, invalid)
	case o.classifier == nil:
		return o, fmt.Errorf("%w: WithClassifier(nil): classifier must not be nil", ErrInvalidOption)
	case o.retryAfter < time.Second || o.retryAfter%time.Second != 0:
		return o, fmt.Errorf("%w: WithRetryAfter(%v): must be a whole number of seconds, at least 1s",
			ErrInvalidOption, o.retryAfter)
	}
	// Only a Handler can be given WithCriticalityPolicy: a Transport sends
	// the level of the request's context.
	if invalid := o.criticality.p.Check(serverSide, false, o.criticality.String(), ""); invalid != "" {
		return o, fmt.Errorf("%w: %s", ErrInvalidOption, invalid)
	}
	o.get = get
	return o, nil
}

// isNil reports whether opt, a TransportOption or a HandlerOption, is nil
// or holds a nil Option.
func isNil(opt any) bool {
	f, ok := opt.(Option)
	return opt == nil || ok && f == nil
}

// transportOptions applies opts over the defaults of a Transport and
// validates them.
func transportOptions(opts []TransportOption) (options, error) {
	return newOptions(clientSide, func(o *options) bool {
		for _, opt := range opts {
			if isNil(opt) {
				return false
			}
			opt.transport(o)
		}
		return true
	})
}

// handlerOptions applies opts over the defaults of a Handler and
// validates them.
func handlerOptions(opts []HandlerOption) (options, error) {
	return newOptions(serverSide, func(o *options) bool {
		for _, opt := range opts {
			if isNil(opt) {
				return false
			}
			opt.handler(o)
		}
		return true
	})
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
	return func(o *options) { o.classifier, o.classified = c, true }
}

// WithFallback sets a function that a [Transport] calls instead of
// returning the error for a dropped request. It receives the request (not
// sent; its body already closed) and the drop error, which matches
// [breaker.ErrServiceUnavailable]; what it returns is what RoundTrip
// returns, so it must return a non-nil response or a non-nil error, as a
// RoundTripper does. A response it returns belongs to the caller, who
// closes its body. Default: none; nil also means none. Transport only.
func WithFallback(fallback func(req *http.Request, err error) (*http.Response, error)) TransportOption {
	return transportOnly(func(o *options) { o.fallback = fallback })
}

// WithRetryAfter sets the Retry-After a [Handler] sends with a shed
// request. Default 1 s; it must be a whole number of seconds, at least
// one, since the header counts in seconds. Handler only.
func WithRetryAfter(d time.Duration) HandlerOption {
	return handlerOnly(func(o *options) { o.retryAfter = d })
}

// WithCriticalityPolicy sets how a [Handler] finds the level it serves a
// request at (see [CriticalityPolicy], which says which policy to pick
// where). Default [IgnoreHeader]: every request at
// [criticality.Default], whatever its [CriticalityHeader] says, the
// one that is safe for a server anyone can reach. [TrustHeader] believes
// the header up to a level, for servers that only trusted services reach;
// [LevelFunc] lets the server decide. Handler only.
func WithCriticalityPolicy(p CriticalityPolicy) HandlerOption {
	return handlerOnly(func(o *options) { o.criticality = p })
}

// WithOverloadLimit turns a [Handler]'s overload limit on (the default)
// or off. On, the Handler lets a learned number of requests into the
// wrapped handler at once, queues the rest by criticality and rejects,
// lowest level first, what the server cannot serve (see [Handler] and
// docs/guide/overload.md); a request waiting on a call guarded by one of
// this module's client integrations holds no room meanwhile. Off, every
// request the breaker admits goes to the wrapped handler at once: for a
// server whose handlers mostly wait on something the limit cannot see
// (long polls, unguarded calls to a dependency), or one with a limit of
// its own in front. Handler only.
func WithOverloadLimit(on bool) HandlerOption {
	return handlerOnly(func(o *options) { o.limit = on })
}
