package connectbreaker

import (
	"context"
	"net/http"
	"strconv"

	"connectrpc.com/connect"

	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/serverside"
	"github.com/srebreaker/srebreaker/retry"
)

// CriticalityHeader is the request header (gRPC metadata, for the gRPC
// protocol) that carries a call's [criticality.Level] from a
// [ClientInterceptor] to a [HandlerInterceptor]: one of CRITICAL_PLUS,
// CRITICAL, SHEDDABLE_PLUS or SHEDDABLE, the names
// [criticality.Level.String] gives. It is httpbreaker's header and
// grpcbreaker's metadata key, so that each package's servers read the
// others' clients.
//
// A ClientInterceptor sets it from the call's context (see
// [criticality.With]) when the level there is not [criticality.Default].
// A HandlerInterceptor believes it only when its [CriticalityPolicy] says
// so ([TrustHeader]): by default it ignores it.
const CriticalityHeader = "X-Request-Criticality"

// CriticalityPolicy decides the level a [HandlerInterceptor] serves a call
// at, and so whether a client's [CriticalityHeader] counts: set it with
// [WithCriticalityPolicy]. Make one with [IgnoreHeader], [TrustHeader] or
// [LevelFunc]; the zero value is IgnoreHeader's, the default.
//
// Criticality is meant to be set where a request enters the system, by the
// server (by procedure, by authenticated caller), and carried on only
// between services that trust each other: a client that could name its
// own level would claim the highest and be served first when the server
// sheds. Which to pick where:
//
//	the server is reached by               policy
//	anyone; every call alike               IgnoreHeader() (the default)
//	anyone; the server knows the level     LevelFunc(f): by procedure, by authenticated peer
//	only services that trust each other    TrustHeader(criticality.CriticalPlus)
//	trusted services, none above CRITICAL  TrustHeader(criticality.Critical)
type CriticalityPolicy struct {
	p        serverside.Policy[incoming]
	readPeer bool // LevelFunc's: the call's peer is read for it
}

// incoming is an incoming call as a policy reads it.
type incoming struct {
	ctx    context.Context
	spec   connect.Spec
	peer   connect.Peer
	header http.Header
}

// IgnoreHeader returns the policy a [HandlerInterceptor] has by default:
// every call is served at [criticality.Default], whatever its
// [CriticalityHeader] says. It is the one for a server that anyone can
// reach.
func IgnoreHeader() CriticalityPolicy { return CriticalityPolicy{} }

// TrustHeader returns a policy that serves a call at the level its
// [CriticalityHeader] names, capped at max: a call that claims more is
// served at max, never refused for it. A call without the header, or with
// a value that is not a level, is at [criticality.Default], capped at max
// too, so that no call is served above max. It is the one for a server
// that only services trusting each other reach. max must be one of the
// four levels; [NewHandlerInterceptor] returns an error otherwise.
func TrustHeader(max criticality.Level) CriticalityPolicy {
	return CriticalityPolicy{p: serverside.Trust[incoming](max)}
}

// LevelFunc returns a policy that serves a call at the level f gives for
// the call's context, its spec (the procedure), its peer and its request
// header: the server decides, and may read the header itself for some
// peers (with a TrustHeader policy's [CriticalityPolicy.Level]). A value
// that is not one of the four levels is taken as [criticality.Default]. f
// must not be nil, and may be called from many goroutines at once; a
// panic in it goes on up, and nothing is recorded.
func LevelFunc(f func(ctx context.Context, spec connect.Spec, peer connect.Peer, header http.Header) criticality.Level) CriticalityPolicy {
	if f == nil {
		return CriticalityPolicy{p: serverside.Decided[incoming](nil)}
	}
	return CriticalityPolicy{p: serverside.Decided(func(in incoming) criticality.Level {
		return f(in.ctx, in.spec, in.peer, in.header)
	}), readPeer: true}
}

// Level returns the level p serves an incoming call at, given its
// context, spec, peer and request header: always one of the four levels,
// [criticality.Default] for a policy [NewHandlerInterceptor] would refuse.
func (p CriticalityPolicy) Level(ctx context.Context, spec connect.Spec, peer connect.Peer, header http.Header) criticality.Level {
	return p.p.Level(incoming{ctx, spec, peer, header}, claimedLevel)
}

// String describes p as the code that makes it, for error messages.
func (p CriticalityPolicy) String() string { return p.p.String("TrustHeader", "IgnoreHeader") }

// claimedLevel returns the level the call's CriticalityHeader names, or
// the default.
func claimedLevel(in incoming) criticality.Level {
	if vs := in.header[CriticalityHeader]; len(vs) > 0 {
		return serverside.Claimed(vs[0])
	}
	return criticality.Default
}

// setLevelHeader makes h's CriticalityHeader (h's keys in canonical form), if it has one, say c:
// left as it is when it names c alone, the default's name too; otherwise
// set to c, or removed for the default, so that a handler that forwards
// the header does not pass on a claim the server did not believe.
func setLevelHeader(h http.Header, c criticality.Level) {
	vs := h[CriticalityHeader]
	switch {
	case len(vs) == 0, len(vs) == 1 && vs[0] == c.String():
	case c == criticality.Default:
		delete(h, CriticalityHeader)
	default:
		h[CriticalityHeader] = []string{c.String()}
	}
}

// AttemptHeader is the request header that carries the number of the
// attempt a call is, 1-based: "2" for the first retry, as httpbreaker's
// header of the same name. A [ClientInterceptor] sets it when the call's
// context carries an attempt number above 1 (see [retry.WithAttempt],
// which [retry.Policy.Do] sets for each attempt). [AttemptOf] reads it.
const AttemptHeader = "Srebreaker-Attempt"

// previousAttemptsHeader is the metadata in which gRPC's own retries, and
// grpcbreaker's client interceptors, send how many attempts came before.
const previousAttemptsHeader = "Grpc-Previous-Rpc-Attempts"

// AttemptOf returns the attempt number a call's request header carries
// (its keys in canonical form, as connect and net/http give them),
// 1-based: its [AttemptHeader], or else one more than its
// grpc-previous-rpc-attempts metadata (the highest, if it carries
// several), which gRPC clients send; 1 when it has neither, or when no
// value is a number; at most 100: an attempt number is a client's claim
// about itself, and the cap keeps what a server does with it bounded.
func AttemptOf(header http.Header) int {
	if vs := header[AttemptHeader]; len(vs) > 0 {
		return serverside.ParseAttempt(vs[0])
	}
	return serverside.AfterPrevious(header[previousAttemptsHeader])
}

// sendLevelAndAttempt sets in h the call's level and attempt number, as
// ctx carries them, unless they are the default and the first.
func sendLevelAndAttempt(ctx context.Context, h http.Header) {
	if c := criticality.From(ctx); c != criticality.Default {
		h[CriticalityHeader] = []string{c.String()}
	}
	if n := retry.Attempt(ctx); n > 1 {
		h[AttemptHeader] = []string{strconv.Itoa(min(n, serverside.MaxAttempt))}
	}
}
