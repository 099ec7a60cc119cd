// Package chain carries, in the context of a request a guarded server
// serves, whether a guarded call the request made failed: so that the
// breaker nearest a failure throttles it, and every other breaker counts it
// as neither.
//
// A server-side transport (httpbreaker's Handler, grpcbreaker's server
// interceptors, connectbreaker's HandlerInterceptor) gives the handler of a
// request it admitted a context made by [With]. A client-side integration
// (httpbreaker's Transport, grpcbreaker's and connectbreaker's client
// interceptors, sqlbreaker, goredisbreaker), and package breaker for a call
// it drops through a method that takes a context, calls [Failed] with the
// call's context when its breaker records a failure, drops the call, or
// ignores the answer of a shedding server: the breaker nearer the
// dependency already throttles what failed. When the request then fails,
// the server's transport reads [Mark.Down]: a failure that follows from
// its dependency's counts as neither on the server's breaker, and the
// server's answer carries the advice that makes its clients' breakers count
// it as neither too.
//
// [Failed] reads the context on a failure's path alone, once: a call that
// succeeds costs nothing, inside a served request or outside one.
//
// A Mark is safe for concurrent use by multiple goroutines.
package chain

import (
	"context"
	"sync/atomic"
)

// Mark is what a served request's context holds: the name of the first
// breaker whose call, made in that context, failed or was dropped. The zero
// value holds none.
type Mark struct {
	down atomic.Pointer[string]
}

// key is the context key of a Mark.
type key struct{}

// markCtx is a context that holds a Mark: one allocation for both, where
// context.WithValue would take two.
type markCtx struct {
	context.Context
	m Mark
}

func (c *markCtx) Value(k any) any {
	if _, ok := k.(key); ok {
		return &c.m
	}
	return c.Context.Value(k)
}

func (c *markCtx) String() string { return "chain.With" }

// With returns a context derived from parent that holds a new, empty Mark,
// and the Mark. A Mark that parent holds (a server nested in another's
// handler) is hidden: the inner server answers for the calls made in its
// handler, and its answer, which carries the advice, tells the outer.
func With(parent context.Context) (context.Context, *Mark) {
	c := &markCtx{Context: parent}
	return c, &c.m
}

// From returns the Mark that ctx holds, or nil.
func From(ctx context.Context) *Mark {
	if ctx == nil {
		return nil
	}
	m, _ := ctx.Value(key{}).(*Mark)
	return m
}

// Namer is what Failed reads a breaker's name from: a breaker.Breaker.
type Namer interface{ Name() string }

// Failed notes, in the Mark that ctx holds if any, that the call of
// breaker b made in ctx failed, was dropped, or was answered by a shedding
// server. The first breaker noted is kept. It costs one context lookup, and
// outside a served request nothing else.
func Failed(ctx context.Context, b Namer) {
	if m := From(ctx); m != nil && m.down.Load() == nil {
		m.note(b.Name())
	}
}

// note keeps name, unless a name is kept already.
func (m *Mark) note(name string) {
	m.down.CompareAndSwap(nil, &name)
}

// Down returns the name of the first breaker noted by [Failed], and
// whether there is one. A nil Mark holds none.
func (m *Mark) Down() (name string, ok bool) {
	if m == nil {
		return "", false
	}
	if p := m.down.Load(); p != nil {
		return *p, true
	}
	return "", false
}
