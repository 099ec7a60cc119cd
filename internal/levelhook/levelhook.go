// Package levelhook lets a server side ask a breaker about a call at a
// level without a context that carries it: the server sides learn a
// call's level before they know whether they serve it, and make the
// context that carries the level only for a call they serve, so that a
// call they reject or shed at a level costs no allocation of theirs.
// Package breaker sets the hook in its init.
package levelhook

import (
	"context"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
)

// Allow asks b (a breaker.Breaker) about a call at level c made for a
// request whose context is ctx, as b.AllowCtx(criticality.With(ctx, c))
// would, and reports whether it asked: asked is false for a Breaker that
// is not one of package breaker's own, which the caller then asks that
// way.
var Allow func(b any, ctx context.Context, c criticality.Level) (p srebreaker.Promise, asked bool, err error)
