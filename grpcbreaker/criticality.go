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
// [breaker.DefaultCriticality]. A server interceptor reads its first
// value, in any case; a call without it, or with a value that is not a
// level, is served at the default level, never refused for it.
const CriticalityKey = "x-request-criticality"

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

// serverAdmit asks b about an incoming call at the level its metadata
// names. Above or below the default level, the returned context carries
// the level too, so that the calls the handler makes pass it on. A call
// whose client went away before it was admitted gets the context's status.
func serverAdmit(b breaker.Breaker, ctx context.Context) (context.Context, srebreaker.Promise, error) {
	c := incomingCriticality(ctx)
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

// levelStream is a server stream whose context carries the call's level.
type levelStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *levelStream) Context() context.Context { return s.ctx }
