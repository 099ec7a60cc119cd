package breaker

import (
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/internal/overloadhook"
)

// OverloadStats is what the overload limit of a server guarded under the
// breaker's name (httpbreaker's Handler, grpcbreaker's server
// interceptors, connectbreaker's HandlerInterceptor) holds: how many
// calls it lets into the handlers at once, how many are in and waiting,
// and the calls it rejected because the server had no room for them. See
// docs/guide/overload.md.
type OverloadStats struct {
	// Limit is how many calls the server lets into its handlers at once,
	// as learned from their latency.
	Limit float64
	// InFlight is the calls in the handlers now, Queued those waiting for
	// room.
	InFlight, Queued int
	// Overloaded is true while calls arrive faster than the handlers
	// serve them: the queue is then kept short, and the lowest levels'
	// calls are rejected first.
	Overloaded bool
	// QueueHeld is true while, not overloaded, the queue has stood for
	// seconds, never empty and not draining, with calls arriving about as
	// fast as the handlers serve them: it is then held to a few of the
	// handlers' latencies of calls, served oldest first, and the excess is
	// rejected, the lowest levels' first.
	QueueHeld bool
	// Rejected counts the calls rejected since the server was made, by
	// criticality level, highest level first as in [Stats.Criticalities].
	Rejected [4]int64
}

// OverloadEvent is what an [OverloadChanged] event reports: the server's
// overload limit started rejecting calls (its first rejection after none
// for [OverloadQuiet]), or stopped (none rejected for OverloadQuiet since
// its last). A server rejects calls for overload while overloaded and
// while it holds a standing queue short, and when its queue is full; so
// a server told of once may have been overloaded several times within
// the span, and a start and a stop are OverloadQuiet apart at least.
type OverloadEvent struct {
	// Rejecting is true when the server started rejecting calls, false
	// when it stopped.
	Rejecting bool
	// Since is when the server started rejecting, on its clock: for a
	// stop, the start's time.
	Since time.Time
	// Rejected counts the calls rejected since then, by criticality
	// level, highest level first as in [Stats.Criticalities]: for a start,
	// the call that started it.
	Rejected [4]int64
	// Stats are the limit's figures when the server started or stopped.
	Stats OverloadStats
}

// OverloadQuiet is how long a server's overload limit rejects no call
// before it tells that it stopped rejecting ([OverloadEvent]), and up to
// a tenth of a second more (the limit counts time in tenths): a breaker's
// default window. A clock stepped back holds the rejections on until it
// is OverloadQuiet past the last one again.
const OverloadQuiet = 2 * time.Second

// overloadSlot holds the figures' source of the server limit tied to a
// breaker, if any.
type overloadSlot struct {
	stats atomic.Pointer[func() OverloadStats]
}

// snapshot returns the figures, or nil when no limit is tied.
func (s *overloadSlot) snapshot() *OverloadStats {
	f := s.stats.Load()
	if f == nil {
		return nil
	}
	st := (*f)()
	return &st
}

func init() {
	overloadhook.Attach = func(b Breaker, stats func() OverloadStats) func(OverloadEvent) {
		g, ok := b.(*googleBreaker)
		if !ok {
			return nil
		}
		g.overload.stats.Store(&stats)
		if g.events == nil {
			return nil
		}
		return g.tellOverload
	}
}

// tellOverload tells the breaker's listeners of o, as an
// [OverloadChanged] event.
func (b *googleBreaker) tellOverload(o OverloadEvent) {
	b.events.send(Event{Kind: OverloadChanged, Shedding: b.events.shedding.Load(),
		Breaker: b.name, At: b.wallNow(), Overload: &o})
}
