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
// so that a server side carries the level only in the context it makes
// for a call it serves (chain.With).
func AllowAt(b breaker.Breaker, ctx context.Context, c criticality.Level) (srebreaker.Promise, error) {
	if p, asked, err := levelhook.Allow(b, ctx, c); asked {
		return p, err
	}
	return b.AllowCtx(criticality.With(ctx, c))
}
