// Package drophook tells a tracer of the calls a breaker drops, with the
// call's context, without package breaker importing a tracer: otelbreaker
// sets the hook, and breaker calls it for each call dropped through a
// method that takes a context (AllowCtx, the Do…Ctx methods, Call). A
// call that is admitted never reads the hook, and a drop reads it once.
package drophook

import (
	"context"
	"sync/atomic"

	"github.com/srebreaker/srebreaker/criticality"
)

// Drop is what a breaker says of a call it dropped.
type Drop struct {
	// Breaker is the breaker's name.
	Breaker string
	// Criticality is the level the call asked at (criticality.Default
	// when its context named none).
	Criticality criticality.Level
	// Probability is the drop probability of that level when the call
	// was dropped; 1 for a call an operator's override dropped.
	Probability float64
	// Reason is the breaker's newest failure reason, "" when it holds
	// none.
	Reason string
	// Forced is true for a call an operator's override dropped (an error
	// matching breaker.ErrForced).
	Forced bool
	// Err is the drop's error.
	Err error
	// Fallback is true when a fallback given to a DoWithFallback method
	// serves the call in its place: the call has not failed yet.
	Fallback bool
}

var hook atomic.Pointer[func(context.Context, Drop)]

// Dropped tells the hook, if one is set, that breaker b (a
// breaker.Breaker) dropped a call with err, a call asked at the default
// level through Allow, which reads no context, on behalf of a request
// whose context is ctx: for the integrations, which ask so on their
// fastest path and call this on the drop's path alone. It notes the drop
// in the chain.Mark of ctx too, if it holds one (package chain). Package
// breaker sets it in its init.
var Dropped func(b any, ctx context.Context, err error)

// Set makes f the hook, in place of any, and returns a function that puts
// back the one it replaced. A nil f removes the hook.
func Set(f func(context.Context, Drop)) (restore func()) {
	var p *func(context.Context, Drop)
	if f != nil {
		p = &f
	}
	old := hook.Swap(p)
	return func() { hook.Store(old) }
}

// Load returns the hook, or nil.
func Load() func(context.Context, Drop) {
	if p := hook.Load(); p != nil {
		return *p
	}
	return nil
}
