package grpcbreaker

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
)

// CriticalityKey is the metadata key that carries a call's
// [breaker.Criticality] from the client interceptors to the server
// interceptors: one of CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS or
// SHEDDABLE, the names [breaker.Criticality.String] gives.
//
// A client interceptor adds it from the call's context (see
// [breaker.WithCriticality]) when the level there is not
// [breaker.DefaultCriticality]. A server interceptor believes it only when
// its [CriticalityPolicy] says so ([TrustMetadata]): by default it ignores
// it.
const CriticalityKey = "x-request-criticality"

// CriticalityPolicy decides the level the server interceptors serve a call
// at, and so whether a client's [CriticalityKey] metadata counts: set it
// with [WithCriticalityPolicy]. Make one with [IgnoreMetadata],
// [TrustMetadata] or [LevelFunc]; the zero value is IgnoreMetadata's, the
// default.
//
// Criticality is meant to be set where a request enters the system, by the
// server (by method, by authenticated caller), and carried on only between
// services that trust each other: a client that could name its own level
// would claim the highest and be served first when the server sheds. Which
// to pick where:
//
//	the server is reached by               policy
//	anyone; every call alike               IgnoreMetadata() (the default)
//	anyone; the server knows the level     LevelFunc(f): by method, by authenticated peer
//	only services that trust each other    TrustMetadata(breaker.CriticalPlus)
//	trusted services, none above CRITICAL  TrustMetadata(breaker.Critical)
//
// docs/criticality.md says more.
type CriticalityPolicy struct {
	kind policyKind
	max  breaker.Criticality                                              // TrustMetadata's
	fn   func(ctx context.Context, fullMethod string) breaker.Criticality // LevelFunc's
}

type policyKind int8

const (
	ignoreMetadata policyKind = iota
	trustMetadata
	levelFunc
)

// IgnoreMetadata returns the policy the server interceptors have by
// default: every call is served at [breaker.DefaultCriticality], whatever
// its [CriticalityKey] metadata says. It is the one for a server that
// anyone can reach.
func IgnoreMetadata() CriticalityPolicy { return CriticalityPolicy{} }

// TrustMetadata returns a policy that serves a call at the level the first
// value of its [CriticalityKey] metadata names, capped at max: a call that
// claims more is served at max, never refused for it. A call without the
// key, or with a value that is not a level, is at
// [breaker.DefaultCriticality], capped at max too, so that no call is
// served above max. It is the one for a server that only services trusting
// each other reach. max must be one of the four levels; the interceptor
// constructors panic otherwise.
func TrustMetadata(max breaker.Criticality) CriticalityPolicy {
	return CriticalityPolicy{kind: trustMetadata, max: max}
}

// LevelFunc returns a policy that serves a call at the level f gives for
// the call's context (its incoming metadata, its peer and the peer's
// credentials: see google.golang.org/grpc/peer) and full method: the server
// decides, and may read the metadata itself for some peers (with a
// TrustMetadata policy's [CriticalityPolicy.Level]). A value that is not
// one of the four levels is taken as [breaker.DefaultCriticality]. f must
// not be nil, and may be called from many goroutines at once; a panic in
// it goes on up, and nothing is recorded.
func LevelFunc(f func(ctx context.Context, fullMethod string) breaker.Criticality) CriticalityPolicy {
	return CriticalityPolicy{kind: levelFunc, fn: f}
}

// Level returns the level p serves an incoming call at, given its context
// and full method: always one of the four levels,
// [breaker.DefaultCriticality] for a policy the constructors would refuse.
func (p CriticalityPolicy) Level(ctx context.Context, fullMethod string) breaker.Criticality {
	var c breaker.Criticality
	switch p.kind {
	case trustMetadata:
		if !p.max.Valid() {
			return breaker.DefaultCriticality
		}
		c = min(incomingCriticality(ctx), p.max)
	case levelFunc:
		if p.fn != nil {
			c = p.fn(ctx, fullMethod)
		}
	default:
		return breaker.DefaultCriticality
	}
	if !c.Valid() {
		return breaker.DefaultCriticality
	}
	return c
}

// String describes p as the code that makes it, for error messages.
func (p CriticalityPolicy) String() string {
	switch p.kind {
	case trustMetadata:
		if p.max.Valid() {
			return "TrustMetadata(breaker." + levelName(p.max) + ")"
		}
		return "TrustMetadata(" + p.max.String() + ")"
	case levelFunc:
		if p.fn == nil {
			return "LevelFunc(nil)"
		}
		return "LevelFunc(f)"
	}
	return "IgnoreMetadata()"
}

// validate returns what is wrong with p, or "".
func (p CriticalityPolicy) validate() string {
	switch {
	case p.kind == trustMetadata && !p.max.Valid():
		return "max must be one of the four levels, breaker.CriticalPlus to breaker.Sheddable"
	case p.kind == levelFunc && p.fn == nil:
		return "function must not be nil"
	}
	return ""
}

// levelName returns the Go name of a valid level.
func levelName(c breaker.Criticality) string {
	switch c {
	case breaker.CriticalPlus:
		return "CriticalPlus"
	case breaker.Critical:
		return "Critical"
	case breaker.SheddablePlus:
		return "SheddablePlus"
	}
	return "Sheddable"
}

// withOutgoingCriticality returns ctx with its criticality in the outgoing
// metadata, unless it is the default.
func withOutgoingCriticality(ctx context.Context) context.Context {
	if c := breaker.CriticalityFrom(ctx); c != breaker.DefaultCriticality {
		return metadata.AppendToOutgoingContext(ctx, CriticalityKey, c.String())
	}
	return ctx
}

// incomingCriticality returns the level the call's metadata names, or the
// default.
func incomingCriticality(ctx context.Context) breaker.Criticality {
	vs := metadata.ValueFromIncomingContext(ctx, CriticalityKey)
	if len(vs) == 0 {
		return breaker.DefaultCriticality
	}
	c, err := breaker.ParseCriticality(vs[0])
	if err != nil {
		return breaker.DefaultCriticality
	}
	return c
}

// serverAdmit asks b about an incoming call at the level policy gives it.
// Above or below the default level, the returned context carries the level
// too, so that the calls the handler makes pass it on. CriticalityKey
// metadata that the call carries is made to say that level (removed for
// the default) in the returned context, so that a handler that forwards
// the incoming metadata does not pass on a claim the server did not
// believe. A call whose client went away before it was admitted gets the
// context's status.
func serverAdmit(b breaker.Breaker, ctx context.Context, policy CriticalityPolicy,
	fullMethod string) (context.Context, srebreaker.Promise, error) {
	c := policy.Level(ctx, fullMethod)
	ctx = incomingLevel(ctx, c)
	if c == breaker.DefaultCriticality {
		p, err := b.Allow()
		if err != nil {
			return ctx, nil, serverShed(err)
		}
		return ctx, p, nil
	}
	ctx = breaker.WithCriticality(ctx, c)
	if err := ctx.Err(); err != nil {
		return ctx, nil, status.FromContextError(err).Err()
	}
	p, err := b.AllowCtx(ctx)
	if err != nil {
		return ctx, nil, serverShed(err)
	}
	return ctx, p, nil
}

// incomingLevel returns ctx with its incoming CriticalityKey metadata, if
// it has any, saying c, or removed when c is the default. It copies the
// metadata only when it has to.
func incomingLevel(ctx context.Context, c breaker.Criticality) context.Context {
	vs := metadata.ValueFromIncomingContext(ctx, CriticalityKey)
	if len(vs) == 0 || c != breaker.DefaultCriticality && len(vs) == 1 && vs[0] == c.String() {
		return ctx
	}
	md, _ := metadata.FromIncomingContext(ctx) // a copy
	if c == breaker.DefaultCriticality {
		md.Delete(CriticalityKey)
	} else {
		md.Set(CriticalityKey, c.String())
	}
	return metadata.NewIncomingContext(ctx, md)
}

// levelStream is a server stream whose context carries the call's level.
type levelStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *levelStream) Context() context.Context { return s.ctx }
