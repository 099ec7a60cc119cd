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
// inside a served request, it turns the Mark's lock twice more (out and
// back) and takes the server breaker's promise again, and, inside one an
// overload limit let in, the limit's lock twice.
//
// A server side whose overload limit let the request in gives the Mark
// the request's room in that limit ([Mark.Hold]); a client-side
// integration calls [Leave] as a guarded call made in the request's
// context goes out, and [Mark.Return] as it ends, so that the request
// holds no room in its server's limit while it waits on a dependency: the
// breaker of that call throttles the dependency, and the limit stays
// for the server's own work.
//
// In the same way, a server side records the request's own call on its
// Mark ([Mark.Watch]): while a guarded call the request makes is out,
// the Mark gives the server breaker's promise up (Ignore), and as the
// last one comes back it takes a new one, admitted without a decision
// into the breaker's live bucket. The time the request waits on its
// dependencies is then not the server's: a dependency that hangs or is
// slow is counted by the breaker of the call made to it, once, and not
// by the server's breaker too once the request has waited long enough.
//
// A Mark is safe for concurrent use by multiple goroutines.
package chain

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/levelkey"
)

// Mark is what a served request's context holds: the name of the first
// breaker whose call, made in that context, failed or was dropped, the
// request's room in its server's overload limit, and the promise of its
// own call on its server's breaker (see Watch). The zero value holds none
// of them.
type Mark struct {
	down atomic.Pointer[string]
	room Room // set by Hold before the request's handler runs, then read only

	// Away is the request's time on guarded calls, kept by its Room.
	Away Away

	mu  sync.Mutex
	own srebreaker.Promise // the request's promise; guarded by mu
	out int32              // guarded calls out; guarded by mu
	// watched is set by Watch before the request's handler runs, then
	// read only.
	watched bool
	paused  bool // own is given up while calls are out; guarded by mu
	settled bool // own is recorded or answered; guarded by mu
	// level is the level the request is served at, which the Context
	// holding the Mark carries (criticality.Default: none of its own);
	// kept here, in the Mark's last spare byte, so that the Context is no
	// larger for it. Set by Init, then read only.
	level criticality.Level
}

// Room is a served request's room in its server's overload limit: told
// by Leave as each guarded call the request makes goes out, and by Return
// as it ends, it keeps m.Away under a lock of its own.
type Room interface {
	Leave(m *Mark)
	Return(m *Mark)
}

// Away is what a Room keeps of a request's guarded calls: how many are
// out, and whether the request has given its room back, changed without
// a lock (a room let in without the Room's lock is given back without
// it); Since and Total under the Room's own lock.
type Away struct {
	state atomic.Int32  // guarded calls out now, and awayDone once the room is given back
	Since time.Time     // when the first of them went out
	Total time.Duration // time with a guarded call out, before Since
}

// awayDone is the bit of Away.state set once the request has given its
// room back.
const awayDone = 1 << 30

// Out counts a guarded call going out, unless the request has given its
// room back (ok false), and reports whether it is the first out.
func (a *Away) Out() (first, ok bool) {
	for {
		s := a.state.Load()
		if s&awayDone != 0 {
			return false, false
		}
		if a.state.CompareAndSwap(s, s+1) {
			return s == 0, true
		}
	}
}

// In counts a guarded call ended, unless the request has given its room
// back or none is out, and reports whether it was the last out: the
// request then holds its room again.
func (a *Away) In() (last bool) {
	for {
		s := a.state.Load()
		if s&awayDone != 0 || s == 0 {
			return false
		}
		if a.state.CompareAndSwap(s, s-1) {
			return s == 1
		}
	}
}

// Finish marks the room given back and returns how many guarded calls
// were out then: while any is, the request held no room to give.
func (a *Away) Finish() (out int32) {
	for {
		s := a.state.Load()
		if a.state.CompareAndSwap(s, s|awayDone) {
			return s &^ awayDone
		}
	}
}

// key is the context key of a Mark.
type key struct{}

// Context is a context that holds a Mark, and the level the request is
// served at: one allocation for all, where context.WithValue and
// criticality.With would take three, and none of its own when a server
// embeds it in what it allocates for a request anyway. Its zero value
// holds no Mark until [Context.Init]; use a Context only as Init
// returns it.
type Context struct {
	context.Context
	m Mark // its level too
}

// Value implements context.Context.
func (c *Context) Value(k any) any {
	if _, ok := k.(key); ok {
		return &c.m
	}
	if c.m.level != criticality.Default && k == any(levelkey.Key) {
		return c.m.level
	}
	return c.Context.Value(k)
}

func (c *Context) String() string { return "chain.With" }

// Mark returns the Mark c holds.
func (c *Context) Mark() *Mark { return &c.m }

// Init makes c a context derived from parent that holds a new, empty
// Mark, as With does, and returns it and the Mark. It must be called once,
// before c is used.
func (c *Context) Init(parent context.Context, level criticality.Level) (context.Context, *Mark) {
	c.Context, c.m.level = parent, level
	return c, &c.m
}

// With returns a context derived from parent that holds a new, empty Mark,
// and the Mark, and carries level, the level the request is served at
// (criticality.From reads it), unless it is [criticality.Default]: the
// context then carries what parent carries. A Mark that parent holds (a
// server nested in another's handler) is hidden: the inner server
// answers for the calls made in its handler, and its answer, which
// carries the advice, tells the outer.
func With(parent context.Context, level criticality.Level) (context.Context, *Mark) {
	return new(Context).Init(parent, level)
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

// Leave tells the Mark that ctx holds, if any, that a guarded call made
// in ctx goes out: the room it holds, and the promise it watches, the
// first call out (see [Mark.Watch]). It returns the Mark, whose Return
// the caller calls as the call ends; it returns nil (whose Return does
// nothing) when ctx holds neither a room nor a promise. It costs one
// context lookup.
func Leave(ctx context.Context) *Mark {
	m := From(ctx)
	if m == nil || m.room == nil && !m.watched {
		return nil
	}
	if m.room != nil {
		m.room.Leave(m)
	}
	if m.watched {
		m.mu.Lock()
		m.out++
		if m.out == 1 && !m.settled {
			m.own.(Resumer).Ignore() // see Watch
			m.paused = true
		}
		m.mu.Unlock()
	}
	return m
}

// Return tells the Mark that the guarded call [Leave] returned m for has
// ended: its room, and the promise it watches, which the last call back
// takes again. Return of a nil Mark does nothing.
func (m *Mark) Return() {
	if m == nil {
		return
	}
	if m.room != nil {
		m.room.Return(m)
	}
	if m.watched {
		m.mu.Lock()
		if m.out > 0 {
			m.out--
			if m.out == 0 {
				m.resume()
			}
		}
		m.mu.Unlock()
	}
}

// Resumer is a promise that a Mark can give up while its request waits
// on a guarded call, and take again after: the promises of package
// breaker's breakers. Resumed returns a new promise of the same breaker
// for the call, admitted without a decision (it was admitted already)
// into the live bucket; its argument, of a type only this module's
// packages can name, keeps the method theirs.
type Resumer interface {
	srebreaker.Promise
	Ignore()
	Resumed(Resuming) srebreaker.Promise
}

// Resuming is the type of [Resumer.Resumed]'s argument.
type Resuming struct{}

// Watch makes m the keeper of p, the promise of the request's own call
// on its server's breaker, before the request's handler runs, and
// returns the promise to record the call's outcome on: m, when p is a
// [Resumer], or p itself (a probe's, a test's), which the Mark leaves
// be. While a guarded call made in the request's context is out, m holds
// p given up; the last back takes a new one (see package chain). Watch
// of a nil Mark returns p.
func (m *Mark) Watch(p srebreaker.Promise) srebreaker.Promise {
	if m == nil {
		return p
	}
	if _, ok := p.(Resumer); !ok {
		return p
	}
	m.own, m.watched = p, true
	return m
}

// resume takes the promise given up again, if it is. m.mu is held.
func (m *Mark) resume() {
	if m.paused && !m.settled {
		m.own = m.own.(Resumer).Resumed(Resuming{})
		m.paused = false
	}
}

// settle returns the promise to record the outcome on, taken again if
// it was given up, once: Leave and Return leave it be after.
func (m *Mark) settle() srebreaker.Promise {
	m.mu.Lock()
	m.resume()
	p := m.own
	m.settled = true
	m.mu.Unlock()
	return p
}

// Accept, Reject, RejectOverloaded and Ignore record the request's own
// call on the promise m watches (see Watch), taken again first if it was
// given up; the server side calls one of them, once.
func (m *Mark) Accept() { m.settle().Accept() }

func (m *Mark) Reject(reason string) { m.settle().Reject(reason) }

func (m *Mark) RejectOverloaded(reason string) {
	srebreaker.RejectOverloaded(m.settle(), reason)
}

func (m *Mark) Ignore() { srebreaker.Ignore(m.settle()) }

// Answered marks the request's own call answered (see package breaker's
// promises): Leave and Return leave it be after, and the promise it
// returns records the outcome.
func (m *Mark) Answered() srebreaker.Promise {
	p := m.settle()
	if a, ok := p.(interface{ Answered() srebreaker.Promise }); ok {
		return a.Answered()
	}
	return p
}

var (
	_ srebreaker.Ignorer          = (*Mark)(nil)
	_ srebreaker.OverloadRejecter = (*Mark)(nil)
)

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
