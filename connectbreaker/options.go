package connectbreaker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"
	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// ErrInvalidOption is wrapped by the error [NewClientInterceptor] and
// [NewHandlerInterceptor] return for an invalid option; the full text
// names the option and what was wrong with it.
var ErrInvalidOption = errors.New("connectbreaker: invalid option")

// ErrWrongSide is wrapped by the error of every call that meets an
// interceptor on the wrong side: a [ClientInterceptor] given to a handler
// (connect.NewUnaryHandler and the like), or a [HandlerInterceptor] given
// to a client (connect.NewClient). The call fails with code Internal
// without being sent or served, and nothing is recorded.
var ErrWrongSide = errors.New("connectbreaker: interceptor on the wrong side")

// DefaultFailureCodes are the codes that count as a failure unless
// [WithFailureCodes] says otherwise: the codes that say the server is
// down, overloaded, too slow or broken, rather than that the request was
// wrong (grpcbreaker's too). A copy; changing it changes nothing.
func DefaultFailureCodes() []connect.Code {
	return []connect.Code{
		connect.CodeUnavailable, connect.CodeDeadlineExceeded, connect.CodeResourceExhausted,
		connect.CodeInternal, connect.CodeDataLoss, connect.CodeUnknown,
	}
}

// codeOK is the code of a call that succeeded, which connect does not
// name; maxCode is the largest code it defines.
const (
	codeOK  connect.Code = 0
	maxCode              = connect.CodeUnauthenticated
)

// KeyFunc names the breaker for a call: calls with the same key share a
// breaker. On a client, host is the host (with its port, if it has one)
// of the URL the client calls, such as "127.0.0.1:8080"; on a handler it
// is empty. procedure is the call's procedure, such as
// "/acme.foo.v1.FooService/Bar". A KeyFunc may be called from many
// goroutines at once.
type KeyFunc func(ctx context.Context, host, procedure string) string

// DefaultKey is the default [KeyFunc]: one breaker per host and procedure
// on a client, such as "127.0.0.1:8080/acme.foo.v1.FooService/Bar", and on
// a handler (host empty) "server:" and the procedure, such as
// "server:/acme.foo.v1.FooService/Bar", so that the breakers of a
// process's clients and handlers can share [breaker.DefaultRegistry]
// without meeting, and an exporter tells them apart. These are the keys
// grpcbreaker's interceptors give the same calls over gRPC.
func DefaultKey(_ context.Context, host, procedure string) string {
	if host == "" {
		return serverPrefix + procedure
	}
	return host + procedure
}

// HostKey is a [KeyFunc] for one breaker per host on a client, whatever
// the procedure: the key is host, such as "127.0.0.1:8080", which is also
// the key httpbreaker's Transport gives the host. On a handler it is
// "server:connect", one breaker for every procedure.
func HostKey(_ context.Context, host, _ string) string {
	if host == "" {
		return serverPrefix + "connect"
	}
	return host
}

// serverPrefix starts the keys DefaultKey gives on a handler.
const serverPrefix = "server:"

// Option configures a [ClientInterceptor] or a [HandlerInterceptor]: it is
// both a [ClientOption] and a [HandlerOption].
type Option func(*options)

// ClientOption configures a [ClientInterceptor]: an [Option], which both
// sides take. No option of this package applies to clients only.
type ClientOption interface{ applyClient(*options) }

// HandlerOption configures a [HandlerInterceptor]: an [Option], which both
// sides take, or [WithCriticalityPolicy], which only a handler does. A
// HandlerOption given to [NewClientInterceptor] does not compile.
type HandlerOption interface{ applyHandler(*options) }

func (f Option) applyClient(o *options)  { f(o) }
func (f Option) applyHandler(o *options) { f(o) }

// handlerOnly is an option of the handler side alone.
type handlerOnly func(*options)

func (f handlerOnly) applyHandler(o *options) { f(o) }

// options are the settings of either side.
type options struct {
	registry *breaker.Registry
	get      func(key string) breaker.Breaker // registry.Get, unless a test sets it
	key      KeyFunc
	keySet   bool
	codes    []connect.Code // as given, for the error text
	failures uint32         // bit c set: code c is a failure

	criticality CriticalityPolicy // the handler's
	policySet   bool

	limit bool        // a HandlerInterceptor's overload limit is on: WithOverloadLimit
	clock clock.Clock // the overload limit's; nil for the system clock

	keys   keyMemo // DefaultKey's keys, when key is DefaultKey
	client bool    // the options are a ClientInterceptor's
}

// defaultOptions are the options before any is applied.
func defaultOptions() *options {
	return &options{registry: breaker.DefaultRegistry(), key: DefaultKey, codes: DefaultFailureCodes(), limit: true}
}

// validate checks o for side s and completes it.
func (o *options) validate(s serverside.Side) error {
	get, invalid := serverside.Breakers(o.registry, o.get, o.key != nil)
	switch {
	case invalid != "":
		return fmt.Errorf("%w: %s", ErrInvalidOption, invalid)
	case len(o.codes) == 0:
		return fmt.Errorf("%w: WithFailureCodes(): at least one code is needed", ErrInvalidOption)
	}
	if invalid := o.criticality.p.Check(s, o.policySet, o.criticality.String(),
		"a HandlerInterceptor, not to a ClientInterceptor: a client sends the level of the call's context"); invalid != "" {
		return fmt.Errorf("%w: %s", ErrInvalidOption, invalid)
	}
	for _, c := range o.codes {
		if c == codeOK || c > maxCode {
			return fmt.Errorf("%w: WithFailureCodes(%s): code %d cannot be a failure code; valid codes are %s to %s",
				ErrInvalidOption, joinCodes(o.codes), uint32(c), connect.CodeCanceled, maxCode)
		}
		o.failures |= 1 << c
	}
	o.get = get
	return nil
}

func joinCodes(cs []connect.Code) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

// keyOf returns the key of a call to host and procedure, and last, the
// memory of the function it calls through, remembers it: a client's host
// and procedure, a handler's procedure, are the same on every call of one
// function connect wraps, so that the key is found by comparing two
// strings, which share their bytes with the last call's. k is what last
// holds of the key; nil for a KeyFunc of the caller's, called on every
// call.
func (o *options) keyOf(last *lastKey, ctx context.Context, host, procedure string) (key string, k *keyed) {
	if o.keySet {
		return o.key(ctx, host, procedure), nil
	}
	if k := last.p.Load(); k != nil && k.host == host && k.procedure == procedure {
		return k.key, k
	}
	k = &keyed{host: host, procedure: procedure, key: o.keys.key(host, procedure)}
	last.p.Store(k)
	return k.key, k
}

// lastKey is the memory of the last key of a function connect wraps.
type lastKey struct{ p atomic.Pointer[keyed] }

// keyed is the key of a call to host and procedure; on a handler, with the
// memory of the key, once looked up.
type keyed struct {
	host, procedure, key string
	ov                   atomic.Pointer[serverside.Overload]
}

// keyMemo remembers the keys DefaultKey gives, so that a call does not
// build its key anew: a map swapped whole when a key is added, read
// without a lock. The pairs of a program's clients and handlers are few
// (hosts it calls, procedures it serves); past maxMemoKeys, which only
// hosts from outside reach, keys are built on each call.
type keyMemo struct {
	m  atomic.Pointer[map[hostProcedure]string]
	mu sync.Mutex // serializes additions
}

type hostProcedure struct{ host, procedure string }

// maxMemoKeys is how many keys a keyMemo remembers.
const maxMemoKeys = 1024

func (k *keyMemo) key(host, procedure string) string {
	hp := hostProcedure{host, procedure}
	if m := k.m.Load(); m != nil {
		if key, ok := (*m)[hp]; ok {
			return key
		}
	}
	key := DefaultKey(context.Background(), host, procedure)
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.m.Load()
	if old != nil && len(*old) >= maxMemoKeys {
		return key
	}
	m := make(map[hostProcedure]string, 1+lenOf(old))
	if old != nil {
		for hp, key := range *old {
			m[hp] = key
		}
	}
	m[hp] = key
	k.m.Store(&m)
	return key
}

func lenOf(m *map[hostProcedure]string) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// WithRegistry sets the registry the breakers come from, one per key.
// Default [breaker.DefaultRegistry], which httpbreaker's and grpcbreaker's
// transports use too: every interceptor of the program shares it, so that
// one breaker guards a procedure however many clients call it, and an
// exporter given that registry reports them all. Give a registry of your
// own for breakers with other options ([breaker.NewRegistry]'s, or
// [breaker.Registry.Configure] per key) or to keep them apart from the
// rest. It must not be nil.
//
// A registry keeps at most [breaker.DefaultLimit] breakers unless
// [breaker.Registry.SetLimit] says otherwise, forgetting the least
// recently used of those that shed nothing first, so that hosts and
// procedures from outside cost bounded memory.
func WithRegistry(r *breaker.Registry) Option {
	return func(o *options) { o.registry = r }
}

// WithKey sets the function that names the breaker for a call. Default
// [DefaultKey]: one breaker per host and procedure on a client, per
// procedure on a handler; [HostKey] gives one per host. Since clients and
// handlers share a registry by default, keep a handler's keys apart from
// its clients'. It must not be nil.
func WithKey(key KeyFunc) Option {
	return func(o *options) { o.key, o.keySet = key, true }
}

// WithFailureCodes sets the codes that count as a failure, replacing
// [DefaultFailureCodes]; a call ending with any other code counts as a
// success, except canceled, which counts as neither unless it is in the
// set. A call the caller canceled counts as neither whatever the set. At
// least one code is needed, each from connect.CodeCanceled to
// connect.CodeUnauthenticated.
func WithFailureCodes(failures ...connect.Code) Option {
	return func(o *options) { o.codes = append([]connect.Code(nil), failures...) }
}

// WithCriticalityPolicy sets how a [HandlerInterceptor] finds the level
// it serves a call at (see [CriticalityPolicy], which says which policy
// to pick where). Default [IgnoreHeader]: every call at
// [criticality.Default], whatever its [CriticalityHeader] says, the one
// that is safe for a server anyone can reach. [TrustHeader] believes the
// header up to a level, for servers that only trusted services reach;
// [LevelFunc] lets the server decide. Handlers only: it is a
// [HandlerOption], and not a [ClientOption].
func WithCriticalityPolicy(p CriticalityPolicy) HandlerOption {
	return handlerOnly(func(o *options) { o.criticality, o.policySet = p, true })
}

// WithOverloadLimit turns a [HandlerInterceptor]'s overload limit on (the
// default) or off. On, it lets a learned number of calls into the
// handlers at once, queues the rest by criticality and rejects, lowest
// level first, what the server cannot serve (see [HandlerInterceptor] and
// docs/guide/overload.md); a call waiting on a call guarded by one of
// this library's client integrations holds no room meanwhile. Off, every
// call the breaker admits goes to its handler at once: for a server whose
// handlers mostly wait on something the limit cannot see (long polls,
// unguarded calls to a dependency), or one with a limit of its own in
// front. Handlers only.
func WithOverloadLimit(on bool) HandlerOption {
	return handlerOnly(func(o *options) { o.limit = on })
}
