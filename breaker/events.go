package breaker

import (
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// Event is what a [Listener] is told.
type Event struct {
	// Kind says what happened: a change of shedding (the zero value, the
	// only kind before overrides existed) or an operator's override set,
	// cleared or expired.
	Kind EventKind
	// Shedding is true when the breaker started shedding (its drop
	// probability left 0) and false when it stopped (the probability has
	// been 0 for a whole window). An override event repeats the shedding
	// state the breaker last reported, so that a listener that tracks the
	// state from Shedding alone keeps it right; one that acts on each event
	// as a change checks Kind first.
	Shedding bool
	// Breaker is the breaker's name.
	Breaker string
	// At is when the breaker saw it, on the breaker's clock.
	At time.Time
	// DropProbability is the breaker's drop probability then, for a
	// change of shedding; 0 for an override event.
	DropProbability float64
	// Reasons holds the last failure reasons, newest first, when shedding
	// started; nil when it stopped and for an override event.
	Reasons []Reason
	// Override is the override set, cleared or expired, for the override
	// kinds; nil for a change of shedding.
	Override *ActiveOverride
}

// EventKind is what an [Event] reports.
type EventKind int

const (
	// SheddingChanged: the breaker started or stopped shedding (see
	// Event.Shedding).
	SheddingChanged EventKind = iota
	// OverrideSet: an override was set ([SetOverride]), in place of any
	// the breaker held.
	OverrideSet
	// OverrideCleared: the override was cleared ([ClearOverride]) before
	// its time was up.
	OverrideCleared
	// OverrideExpired: the override's time was up, as the breaker found
	// when it next read its clock, or its clock stepped back by more than
	// the window.
	OverrideExpired
)

// String returns the kind's name, as its constant spells it in snake case
// ("shedding_changed", "override_set" …), or "EventKind(n)".
func (k EventKind) String() string {
	switch k {
	case SheddingChanged:
		return "shedding_changed"
	case OverrideSet:
		return "override_set"
	case OverrideCleared:
		return "override_cleared"
	case OverrideExpired:
		return "override_expired"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Listener is told of a breaker's events. It is called synchronously, on
// the goroutine of the call that saw the event (a call to Allow, Do or
// Stats), never under a breaker's lock, so it may call into the breaker;
// listeners given together are called in the order they were given. Keep
// it quick: the call that saw the event waits for it. A panic in a
// listener is recovered and the event goes on to the next listener; a
// listener that ends its goroutine (runtime.Goexit, as t.Fatal does) ends
// the caller's, after the other listeners have been told.
type Listener func(Event)

// WithListener adds a listener for the breaker's events (for a registry's
// breakers, for each of them). A breaker checks for a change of shedding
// when its window enters a new bucket, so SheddingStarted comes at most a
// bucket after the probability left 0, and SheddingStopped once it has
// been 0 for a whole window; a breaker that nobody calls reports nothing.
// It may be given more than once; the listener must not be nil.
func WithListener(l Listener) Option {
	return func(o *options) {
		if l == nil {
			o.nilListener = true
			return
		}
		o.listeners = append(o.listeners, l)
	}
}

// WithLogger logs shedding starting (at level Warn, with the drop
// probability and the last failure reasons) and stopping (at level Info),
// and an override set (at level Warn, with its mode, reason, author and
// end) or ending (at level Info), to l, with the breaker's name as the attribute "breaker". Since shedding
// stops only after a whole window without drops, a flapping dependency
// logs at most one start and one stop per window. The logger must not be
// nil.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.nilLogger = true
			return
		}
		o.listeners = append(o.listeners, logTo(l))
	}
}

// logTo is the listener behind WithLogger.
func logTo(l *slog.Logger) Listener {
	return func(e Event) {
		if e.Kind != SheddingChanged {
			logOverride(l, e)
			return
		}
		if !e.Shedding {
			l.Info("breaker stopped shedding", "breaker", e.Breaker)
			return
		}
		texts := make([]string, len(e.Reasons))
		for i, r := range e.Reasons {
			texts[i] = r.Text
		}
		l.Warn("breaker started shedding", "breaker", e.Breaker,
			"drop_probability", e.DropProbability, "reasons", texts)
	}
}

// logOverride logs an override event: set at level Warn, with all it
// holds, cleared and expired at level Info.
func logOverride(l *slog.Logger, e Event) {
	o := e.Override
	switch {
	case o == nil:
		return
	case e.Kind == OverrideCleared:
		l.Info("breaker override cleared", "breaker", e.Breaker, "mode", o.Mode.String())
		return
	case e.Kind == OverrideExpired:
		l.Info("breaker override expired", "breaker", e.Breaker, "mode", o.Mode.String())
		return
	}
	l.Warn("breaker override set", "breaker", e.Breaker, "mode", o.Mode.String(),
		"reason", o.Reason, "by", o.By, "expires", o.Expires)
}

// events is a breaker's listeners and its shedding state.
type events struct {
	listeners []Listener
	bucket    int64 // how often shedding is checked, in ns
	window    int64 // how long the probability stays 0 before shedding stops, in ns

	// Times are in ns on the breaker's time axis (googleBreaker.now).
	next     atomic.Int64 // ns when the next check is due
	shedding atomic.Bool
	lastShed atomic.Int64 // ns when the probability was last seen above 0
}

func newEvents(o options, bucket time.Duration) *events {
	return &events{
		listeners: slices.Clone(o.listeners),
		bucket:    int64(bucket),
		window:    int64(o.window),
	}
}

// observe looks for a change of shedding at time t (see
// googleBreaker.now), given the drop probability p then, once per bucket:
// the goroutine that finishes a bucket makes the check. A clock stepped
// back by more than the window restarts the checks.
func (e *events) observe(b *googleBreaker, t int64, p float64) {
	next := e.next.Load()
	if (t < next && t >= next-e.window) || !e.next.CompareAndSwap(next, (floorDiv(t, e.bucket)+1)*e.bucket) {
		return
	}
	if p > 0 {
		e.lastShed.Store(t)
		if e.shedding.CompareAndSwap(false, true) {
			e.send(Event{Shedding: true, Breaker: b.name, At: b.wallNow(),
				DropProbability: p, Reasons: b.reasons.snapshot()})
		}
		return
	}
	if e.shedding.Load() && t-e.lastShed.Load() >= e.window && e.shedding.CompareAndSwap(true, false) {
		e.send(Event{Breaker: b.name, At: b.wallNow()})
	}
}

// send calls the listeners with ev, in order.
func (e *events) send(ev Event) { notify(e.listeners, ev) }

// notify calls each listener with ev, in order. A panic in one is recovered
// and the next is called. A listener that calls runtime.Goexit ends the
// goroutine, but the listeners after it are told first.
func notify(listeners []Listener, ev Event) {
	for i, l := range listeners {
		returned := false
		func() {
			defer func() {
				if returned {
					return
				}
				if recover() == nil { // runtime.Goexit: unwinding goes on after this
					notify(listeners[i+1:], ev)
				}
			}()
			l(ev)
			returned = true
		}()
	}
}
