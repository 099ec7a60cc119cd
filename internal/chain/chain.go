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
// [Failed] reads the context on a failure's path alone, once. [Leave]
// reads it on every guarded call of the client-side integrations, once;
// inside a request an overload limit let in, it turns the limit's lock
// twice more (out and back).
//
// A server side whose overload limit let the request in gives the Mark
// the request's room in that limit ([Mark.Hold]); a client-side
// integration calls [Leave] as a guarded call made in the request's
// context goes out, and [Mark.Return] as it ends, so that the request
// holds no room in its server's limit while it waits on a dependency: the
// breaker of that call throttles the dependency, and the limit stays
// for the server's own work.
//
// A Mark is safe for concurrent use by multiple goroutines.
package chain

import (
	"context"
	"sync/atomic"
	"time"
)

// Mark is what a served request's context holds: the name of the first
// breaker whose call, made in that context, failed or was dropped, and
// the request's room in its server's overload limit. The zero value holds
// neither.
type Mark struct {
	down atomic.Pointer[string]
	room Room // set by Hold before the request's handler runs, then read only

	// Away is the request's time on guarded calls, kept by its Room.
	Away Away
}

// Room is a served request's room in its server's overload limit: told
// by Leave as each guarded call the request makes goes out, and by Return
// as it ends, it keeps m.Away under a lock of its own.
type Room interface {
	Leave(m *Mark)
	Return(m *Mark)
}

// Away is what a Room keeps of a request's guarded calls, under its own
// lock.
type Away struct {
	Calls int           // guarded calls out now
	Since time.Time     // when the first of them went out
	Total time.Duration // time with a guarded call out, before Since
	Done  bool          // the request has given its room back
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

// Hold gives m the request's room in its server's overload limit, before
// the request's handler runs.
func (m *Mark) Hold(r Room) { m.room = r }

// Leave tells the room held by the Mark that ctx holds, if any, that a
// guarded call made in ctx goes out, and returns the Mark, whose Return
// the caller calls as the call ends; it returns nil (whose Return does
// nothing) when ctx holds no room. It costs one context lookup.
func Leave(ctx context.Context) *Mark {
	m := From(ctx)
	if m == nil || m.room == nil {
		return nil
	}
	m.room.Leave(m)
	return m
}

// Return tells the room that the guarded call [Leave] returned m for has
// ended. Return of a nil Mark does nothing.
func (m *Mark) Return() {
	if m != nil {
		m.room.Return(m)
	}
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
