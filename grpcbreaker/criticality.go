package grpcbreaker

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/drophook"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// CriticalityKey is the metadata key that carries a call's
// [criticality.Level] from the client interceptors to the server
// interceptors: one of CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS or
// SHEDDABLE, the names [criticality.Level.String] gives.
//
// A client interceptor adds it from the call's context (see
// [criticality.With]) when the level there is not
// [criticality.Default]. A server interceptor believes it only when
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
//	only services that trust each other    TrustMetadata(criticality.CriticalPlus)
//	trusted services, none above CRITICAL  TrustMetadata(criticality.Critical)
//
// docs/guide/criticality.md says more.
type CriticalityPolicy struct {
	p serverside.Policy[incoming]
}

// incoming is an incoming call as a policy reads it.
type incoming struct {
	ctx        context.Context
	fullMethod string
	// claim is the call's CriticalityKey metadata once read (claimed), so
	// that the server side reads it, a copy, once a call.
	claim   []string
	claimed bool
}

// IgnoreMetadata returns the policy the server interceptors have by
// default: every call is served at [criticality.Default], whatever
// its [CriticalityKey] metadata says. It is the one for a server that
// anyone can reach.
func IgnoreMetadata() CriticalityPolicy { return CriticalityPolicy{} }

// TrustMetadata returns a policy that serves a call at the level the first
// value of its [CriticalityKey] metadata names, capped at max: a call that
// claims more is served at max, never refused for it. A call without the
// key, or with a value that is not a level, is at
// [criticality.Default], capped at max too, so that no call is
// served above max. It is the one for a server that only services trusting
// each other reach. max must be one of the four levels; the interceptor
// constructors panic otherwise.
func TrustMetadata(max criticality.Level) CriticalityPolicy {
	return CriticalityPolicy{serverside.Trust[incoming](max)}
}

// LevelFunc returns a policy that serves a call at the level f gives for
// the call's context (its incoming metadata, its peer and the peer's
// credentials: see google.golang.org/grpc/peer) and full method: the server
// decides, and may read the metadata itself for some peers (with a
// TrustMetadata policy's [CriticalityPolicy.Level]). A value that is not
// one of the four levels is taken as [criticality.Default]. f must
// not be nil, and may be called from many goroutines at once; a panic in
// it goes on up, and nothing is recorded.
func LevelFunc(f func(ctx context.Context, fullMethod string) criticality.Level) CriticalityPolicy {
	if f == nil {
		return CriticalityPolicy{serverside.Decided[incoming](nil)}
	}
	return CriticalityPolicy{serverside.Decided(func(in incoming) criticality.Level { return f(in.ctx, in.fullMethod) })}
}

// Level returns the level p serves an incoming call at, given its context
// and full method: always one of the four levels,
// [criticality.Default] for a policy the constructors would refuse.
func (p CriticalityPolicy) Level(ctx context.Context, fullMethod string) criticality.Level {
	return p.p.Level(incoming{ctx: ctx, fullMethod: fullMethod}, claimedLevel)
}

// String describes p as the code that makes it, for error messages.
func (p CriticalityPolicy) String() string { return p.p.String("TrustMetadata", "IgnoreMetadata") }

// withOutgoingCriticality returns ctx with its criticality in the outgoing
// metadata, unless it is the default.
func withOutgoingCriticality(ctx context.Context) context.Context {
	if c := criticality.From(ctx); c != criticality.Default {
		return metadata.AppendToOutgoingContext(ctx, CriticalityKey, c.String())
	}
	return ctx
}

// claimedLevel returns the level the first value of the call's
// CriticalityKey metadata names, or the default.
func claimedLevel(in incoming) criticality.Level {
	vs := in.claim
	if !in.claimed {
		vs = metadata.ValueFromIncomingContext(in.ctx, CriticalityKey)
	}
	if len(vs) == 0 {
		return criticality.Default
	}
	return serverside.Claimed(vs[0])
}

// serverAdmit asks b about an incoming call, whose context is ctx, at
// the level policy gives it, which it returns, for the overload limit
// too, with the call's CriticalityKey metadata (claim): servedContext
// makes, from the three, the context of a call let in. A call whose client
// went away before it was admitted gets the context's status.
func serverAdmit(b breaker.Breaker, ctx context.Context, policy CriticalityPolicy,
	fullMethod string) (_ criticality.Level, claim []string, _ srebreaker.Promise, _ error) {
	claim = metadata.ValueFromIncomingContext(ctx, CriticalityKey)
	c := policy.p.Level(incoming{ctx: ctx, fullMethod: fullMethod, claim: claim, claimed: true}, claimedLevel)
	if c == criticality.Default {
		p, err := b.Allow()
		if err != nil {
			drophook.Dropped(b, ctx, err)
			return c, claim, nil, serverShed(err)
		}
		return c, claim, p, nil
	}
	if err := ctx.Err(); err != nil {
		return c, claim, nil, status.FromContextError(err).Err()
	}
	p, err := serverside.AllowAt(b, ctx, c)
	if err != nil {
		return c, claim, nil, serverShed(err)
	}
	return c, claim, p, nil
}

// servedContext returns the context of a call let in at level c, whose
// context is ctx and CriticalityKey metadata claim, and the chain.Mark it
// holds: above or below the default level, it carries the level too, so
// that the calls the handler makes pass it on; and the metadata is made
// to say that level (see incomingLevel), so that a handler that forwards
// the incoming metadata does not pass on a claim the server did not
// believe. Made only for a call served, it costs a call shed or rejected
// nothing.
func servedContext(ctx context.Context, claim []string, c criticality.Level) (context.Context, *chain.Mark) {
	return chain.With(incomingLevel(ctx, claim, c), c)
}

// incomingLevel returns ctx with its incoming CriticalityKey metadata, if
// it has any (claim, its values), saying c: left as it is when it names c
// alone, the default's name too; otherwise set to c, or removed when c is
// the default. It copies the metadata only when it has to.
func incomingLevel(ctx context.Context, claim []string, c criticality.Level) context.Context {
	vs := claim
	if len(vs) == 0 || len(vs) == 1 && vs[0] == c.String() {
		return ctx
	}
	md, _ := metadata.FromIncomingContext(ctx) // a copy
	if c == criticality.Default {
		md.Delete(CriticalityKey)
	} else {
		md.Set(CriticalityKey, c.String())
	}
	return metadata.NewIncomingContext(ctx, md)
}

// levelStream is a server stream whose context carries the call's level
// and its chain.Mark.
type levelStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *levelStream) Context() context.Context { return s.ctx }
