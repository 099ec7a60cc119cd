package serverside

import (
	"context"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/levelhook"
)

// AllowAt asks b about a call at level c made for a request whose
// context is ctx, as b.AllowCtx(criticality.With(ctx, c)) would: without
// that context for one of package breaker's breakers (package levelhook),
// so that a server side makes it only for a call it serves
// ([WithLevel]).
func AllowAt(b breaker.Breaker, ctx context.Context, c criticality.Level) (srebreaker.Promise, error) {
	if p, asked, err := levelhook.Allow(b, ctx, c); asked {
		return p, err
	}
	return b.AllowCtx(criticality.With(ctx, c))
}

// WithLevel returns ctx carrying c, the level a server side serves a
// call at, for the calls its handler makes: ctx itself at the default
// level, which needs no context of its own.
func WithLevel(ctx context.Context, c criticality.Level) context.Context {
	if c == criticality.Default {
		return ctx
	}
	return criticality.With(ctx, c)
}
