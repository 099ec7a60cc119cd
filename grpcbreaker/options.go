package grpcbreaker

import (
	"context"
	"errors"
	"fmt"
	"github.com/benbjohnson/clock"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// ErrInvalidOption is wrapped by the error [NewClientInterceptors] and
// [NewServerInterceptors] return when an option is invalid; the full text
// names the option and what was wrong with it.
var ErrInvalidOption = errors.New("grpcbreaker: invalid option")

// DefaultFailureCodes are the status codes that count as a failure unless
// [WithFailureCodes] says otherwise: the codes that say the server is
// down, overloaded, too slow or broken, rather than that the request was
// wrong. A copy; changing it changes nothing.
func DefaultFailureCodes() []codes.Code {
	return []codes.Code{
		codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted,
		codes.Internal, codes.DataLoss, codes.Unknown,
	}
}

// maxCode is the largest status code gRPC defines.
const maxCode = codes.Unauthenticated

// DefaultKey is the default key function (see [WithKey]). On a client it
// joins target and full method, such as
// "api.example.com:443/pkg.Service/Method"; on a server (target empty) it
// is "server:" and the full method, such as "server:/pkg.Service/Method",
// so that the breakers of a process's clients and servers can share
// [breaker.DefaultRegistry] without meeting, and an exporter tells them
// apart. Interceptors whose key function it is keep the keys it gives
// (1,024 at most), so that a call makes none.
func DefaultKey(_ context.Context, target, fullMethod string) string {
	if target == "" {
		return serverPrefix + fullMethod
	}
	return target + fullMethod
}

// serverPrefix starts the keys DefaultKey gives on a server. No target
// reads as "server:" followed by a slash.
const serverPrefix = "server:"

// endpoint removes from a client connection's target the dns: or
// passthrough: scheme and the //authority/ that may follow it, as gRPC's
// resolvers do before they read the host and port, so that every way of
// writing one target names one breaker. Schemes are case-insensitive.
// Other targets, and those with nothing after the scheme, are returned as
// they are. It does not allocate.
func endpoint(target string) string {
	scheme, rest, ok := strings.Cut(target, ":")
	if !ok || !strings.EqualFold(scheme, "dns") && !strings.EqualFold(scheme, "passthrough") {
		return target
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		_, rest, ok = strings.Cut(after, "/") // the authority, such as a DNS server, goes
		if !ok {
			return target
		}
	}
	if rest = strings.TrimPrefix(rest, "/"); rest == "" {
		return target // no host: gRPC refuses it; keep it whole rather than look like a server's key
	}
	return rest
}

// Option configures the interceptors of a client ([NewClientInterceptors])
// or of a server ([NewServerInterceptors]); it is also a [ServerOption].
type Option func(*options)

// ServerOption configures the interceptors of a server: an [Option], or
// [WithCriticalityPolicy], which applies to a server only. A
// ServerOption that is not an Option does not compile where a client's
// option is wanted.
type ServerOption interface {
	server(*options)
}

func (f Option) server(o *options) { f(o) }

// serverOnly is an option of the server interceptors only.
type serverOnly func(*options)

func (f serverOnly) server(o *options) { f(o) }

type options struct {
	registry *breaker.Registry
	get      func(key string) breaker.Breaker // registry.Get, unless a test sets it
	key      func(ctx context.Context, target, fullMethod string) string
	codes    []codes.Code // as given, for the error text
	failures uint32       // bit c set: code c is a failure

	criticality CriticalityPolicy // the server's
	limit       bool              // the server's overload limit is on: WithOverloadLimit
	clock       clock.Clock       // the overload limit's; nil for the system clock
	// keys keeps DefaultKey's keys while key is DefaultKey (WithKey not
	// given); nil otherwise.
	keys *keyCache
}

// newOptions applies options over the defaults and validates them: apply
// applies them, and reports false when one of them is nil.
func newOptions(apply func(*options) bool) (*options, error) {
	o := &options{registry: breaker.DefaultRegistry(), key: DefaultKey, codes: DefaultFailureCodes(), limit: true,
		keys: &keyCache{}}
	if !apply(o) {
		return nil, fmt.Errorf("%w: a nil option was given", ErrInvalidOption)
	}
	get, invalid := serverside.Breakers(o.registry, o.get, o.key != nil)
	// Only the server interceptors can be given WithCriticalityPolicy: a
	// client interceptor sends the level of the call's context.
	policy := o.criticality.p.Check(serverside.ServerSide, false, o.criticality.String(), "")
	switch {
	case invalid != "":
		return nil, fmt.Errorf("%w: %s", ErrInvalidOption, invalid)
	case len(o.codes) == 0:
		return nil, fmt.Errorf("%w: WithFailureCodes(): at least one code is needed", ErrInvalidOption)
	case policy != "":
		return nil, fmt.Errorf("%w: %s", ErrInvalidOption, policy)
	}
	for _, c := range o.codes {
		if c == codes.OK || c > maxCode {
			return nil, fmt.Errorf("%w: WithFailureCodes(%s): %s cannot be a failure code; valid codes are %s to %s",
				ErrInvalidOption, joinCodes(o.codes), c, codes.Canceled, maxCode)
		}
		o.failures |= 1 << c
	}
	o.get = get
	return o, nil
}

func joinCodes(cs []codes.Code) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

// WithRegistry sets the registry the breakers come from, one per key.
// Default [breaker.DefaultRegistry], which httpbreaker's Transport and
// Handler also use: every interceptor of the program shares it, so that the unary and
// stream interceptors of a connection, and of several connections to one
// target, use one breaker per target and method, and an exporter given that
// registry reports them all. Give a registry of your own for breakers with
// other options ([breaker.NewRegistry]'s, or [breaker.Registry.Configure]
// per key) or to keep them apart from the rest. It must not be nil.
//
// Targets and methods can come from outside (a target users supply,
// grpc.UnknownServiceHandler): a registry keeps at most
// [breaker.DefaultLimit] breakers unless [breaker.Registry.SetLimit] says
// otherwise, forgetting the least recently used of those that shed
// nothing first, so that their number is bounded.
func WithRegistry(r *breaker.Registry) Option {
	return func(o *options) { o.registry = r }
}

// WithKey sets the function that names the breaker for a call: calls with
// the same key share a breaker. Default [DefaultKey]: one breaker per
// target and method on a client, per method on a server. Return the target
// alone for one breaker per server, or the service name for one per
// service; since clients and servers share a registry by default, keep a
// server's keys apart from its clients'.
//
// On a client, target is the client connection's target (as given to
// grpc.NewClient) without the dns or passthrough scheme and authority gRPC
// reads it with, so that "127.0.0.1:50051", "dns:///127.0.0.1:50051" and
// "passthrough:///127.0.0.1:50051" are all "127.0.0.1:50051"; targets of
// other schemes ("unix:///run/app.sock", "xds:///payments") stay as given.
// On a server, target is empty. fullMethod is "/package.Service/Method".
// The function must not be nil, and may be called from many goroutines at
// once.
func WithKey(key func(ctx context.Context, target, fullMethod string) string) Option {
	return func(o *options) { o.key, o.keys = key, nil }
}

// WithFailureCodes sets the status codes that count as a failure, replacing
// [DefaultFailureCodes]; a call ending with any other code counts as a
// success, except Canceled, which counts as neither unless it is in the
// set. A call the caller canceled counts as neither whatever the set. At
// least one code is needed, and OK cannot be one.
func WithFailureCodes(failures ...codes.Code) Option {
	return func(o *options) { o.codes = append([]codes.Code(nil), failures...) }
}

// WithCriticalityPolicy sets how the server interceptors find the level
// they serve a call at (see [CriticalityPolicy], which says which policy
// to pick where). Default [IgnoreMetadata]: every call at
// [criticality.Default], whatever its [CriticalityKey] metadata
// says, the one that is safe for a server anyone can reach.
// [TrustMetadata] believes the metadata up to a level, for servers that
// only trusted services reach; [LevelFunc] lets the server decide. Server
// interceptors only.
func WithCriticalityPolicy(p CriticalityPolicy) ServerOption {
	return serverOnly(func(o *options) { o.criticality = p })
}

// WithOverloadLimit turns the server interceptors' overload limit on (the
// default) or off. On, they let a learned number of calls into the
// handlers at once, queue the rest by criticality and reject, lowest
// level first, what the server cannot serve (see
// [ServerInterceptors.Unary] and docs/guide/overload.md); a call waiting
// on a call guarded by one of this library's client integrations holds
// no room meanwhile. Off, every call the breaker admits goes to its
// handler at once: for a server whose handlers mostly wait on something
// the limit cannot see (long polls, unguarded calls to a dependency), or
// one with a limit of its own in front. Server interceptors only.
func WithOverloadLimit(on bool) ServerOption {
	return serverOnly(func(o *options) { o.limit = on })
}
