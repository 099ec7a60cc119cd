package breaker

import (
	"sync/atomic"

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
	overloadhook.Attach = func(b Breaker, stats func() OverloadStats) {
		if g, ok := b.(*googleBreaker); ok {
			g.overload.stats.Store(&stats)
		}
	}
}
