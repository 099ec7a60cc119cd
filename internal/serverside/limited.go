package serverside

import (
	"reflect"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/overloadhook"
)

// attach is overloadhook.Attach, asserted once.
var attach = overloadhook.Attach.(func(breaker.Breaker, func() breaker.OverloadStats) func(breaker.OverloadEvent))

// Limiter returns the overload limit of the key whose memory o is, made
// on its first use with clock c (the system clock when nil) and tied to
// b, the key's breaker, whose Stats then carry its figures and whose
// listeners hear when it starts and stops rejecting calls: tied again
// when b is another breaker than the last (a registry that evicted the
// key's breaker made a new one).
func (o *Overload) Limiter(b breaker.Breaker, c clock.Clock) *Limiter {
	l := o.limiter.Load()
	if l == nil {
		l = NewLimiter(c)
		if !o.limiter.CompareAndSwap(nil, l) {
			l = o.limiter.Load()
		}
	}
	if t := o.tied.Load(); t == nil || t.comparable && t.b != b {
		o.tied.Store(&tie{b: b, comparable: reflect.TypeOf(b).Comparable()})
		if tell := attach(b, l.Stats); tell != nil {
			l.tell.Store(&tell)
		} else {
			l.tell.Store(nil)
		}
	}
	return l
}

// tie is the breaker an overload limit's figures were last given to.
// comparable is whether its type is: a breaker of another type, or the
// same comparable type, is told from it with ==, which would panic on
// two values of the same type that is not.
type tie struct {
	b          breaker.Breaker
	comparable bool
}

// Rejecting notes a call the overload limit rejected, attempt its 1-based
// attempt number, and returns the advice the server answers it with: as
// [Overload.Shedding]'s, "no" once most of what the server turns away is
// already a retry. Unlike a shed call, it does not mark the failures of
// the calls served after it: those are the server's own.
func (o *Overload) Rejecting(attempt int) string {
	k := kind(attempt)
	o.shed[k].Add(1)
	o.note(k)
	first, retries := o.shed[0].Load(), o.shed[1].Load()
	if o.refusing.Load() || first+retries >= overloadMinSheds && retries > first {
		return RetryNo
	}
	return RetryLater
}
