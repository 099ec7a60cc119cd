package breaker

import (
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/override"
)

// Event is what a listener ([WithListener]) is told.
type Event struct {
	// Kind says what happened: a change of shedding (the zero value, the
	// only kind before overrides existed), an operator's override set,
	// cleared or expired, or the server guarded under the breaker's name
	// starting or stopping to reject calls for overload.
	Kind EventKind
	// Shedding is true when the breaker started shedding (its drop
	// probability left 0) and false when it stopped (the probability has
	// been 0 for a whole window). An override or overload event repeats
	// the shedding state the breaker last reported, so that a listener
	// that tracks the state from Shedding alone keeps it right; one that
	// acts on each event as a change checks Kind first.
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
	// kinds; nil for the other kinds.
	Override *override.Active
	// Overload is what the server's overload limit reports, for
	// [OverloadChanged]; nil for the other kinds.
	Overload *OverloadEvent
}

// EventKind is what an [Event] reports.
type EventKind int

const (
	// SheddingChanged: the breaker started or stopped shedding (see
	// Event.Shedding).
	SheddingChanged EventKind = 0
	// OverrideSet: an override was set ([Breaker.SetOverride]), in place
	// of any the breaker held.
	OverrideSet EventKind = 1
	// OverrideCleared: the override was cleared ([Breaker.ClearOverride])
	// before its time was up.
	OverrideCleared EventKind = 2
	// OverrideExpired: the override's time was up, as the breaker found
	// when it next read its clock, or its clock stepped back by more than
	// the window.
	OverrideExpired EventKind = 3
	// OverloadChanged: the server guarded under the breaker's name
	// (httpbreaker's Handler, grpcbreaker's server interceptors,
	// connectbreaker's HandlerInterceptor) started or stopped rejecting
	// calls for overload (see Event.Overload).
	OverloadChanged EventKind = 4
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
	case OverloadChanged:
		return "overload_changed"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// WithListener adds a listener for the breaker's events (for a registry's
// breakers, for each of them). Shedding starts ([SheddingChanged] with
// Event.Shedding true) with the breaker's first dropped call, or with the
// first bucket that ends with a drop probability above 0, whichever comes
// first, and stops once the probability has been 0 for a whole window:
// a breaker reports at most one start and one stop per window, and one
// that nobody calls reports nothing. Overrides are told when set, cleared
// or found expired. A server guarded under the breaker's name tells when
// it starts rejecting calls for overload and when it stops, as
// [OverloadEvent] says.
//
// l is called synchronously, on the goroutine of the call that saw the
// event (a call to Allow, Do, Stats or SetOverride), never under a
// breaker's lock, so it may call into the breaker; listeners given
// together are called in the order they were given. Keep it quick: the
// call that saw the event waits for it. A panic in a listener is recovered
// and the event goes on to the next listener; a listener that ends its
// goroutine (runtime.Goexit, as t.Fatal does) ends the caller's, after the
// other listeners have been told. WithListener may be given more than
// once; l must not be nil.
func WithListener(l func(Event)) Option {
	return func(o *options) {
		if l == nil {
			o.nilListener = true
			return
		}
		o.listeners = append(o.listeners, l)
	}
}

// WithLogger logs to l, with the breaker's name as the attribute
// "breaker": shedding starting, at level Warn, with the drop probability
// to two decimals ("drop_probability") and the last failure reasons, each
// once, newest first, joined with "; " and a count where one repeats
// ("reasons"); shedding stopping, at level Info; an override set, at
// level Warn, with its mode, reason, author and end; and an override
// ending, at level Info; a server under the breaker's name starting to
// reject calls for overload, at level Warn, with its limit, the calls in
// its handlers and waiting, and why ("overloaded", "queue_held"), and
// stopping, at level Info, with how long it rejected and how many calls,
// in all and by level. Shedding is told as [WithListener] says: the
// start comes with the first dropped call, and a flapping dependency logs
// at most one start and one stop per window. l must not be nil.
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
func logTo(l *slog.Logger) func(Event) {
	return func(e Event) {
		switch e.Kind {
		case SheddingChanged:
		case OverloadChanged:
			logOverload(l, e)
			return
		default:
			logOverride(l, e)
			return
		}
		if !e.Shedding {
			l.Info("breaker stopped shedding", "breaker", e.Breaker)
			return
		}
		l.Warn("breaker started shedding", "breaker", e.Breaker,
			"drop_probability", math.Round(e.DropProbability*100)/100, "reasons", joinReasons(e.Reasons))
	}
}

// joinReasons is reasons as one line: each text once, newest first, with
// "(×n)" after one that repeats, joined with "; ".
func joinReasons(reasons []Reason) string {
	var texts []string
	counts := make(map[string]int, len(reasons))
	for _, r := range reasons {
		if counts[r.Text] == 0 {
			texts = append(texts, r.Text)
		}
		counts[r.Text]++
	}
	var sb strings.Builder
	for i, t := range texts {
		if i > 0 {
			sb.WriteString("; ")
		}
		sb.WriteString(t)
		if n := counts[t]; n > 1 {
			sb.WriteString(" (×")
			sb.WriteString(strconv.Itoa(n))
			sb.WriteByte(')')
		}
	}
	return sb.String()
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

// logOverload logs an overload event: a start at level Warn, with the
// limit's figures, a stop at level Info, with what was rejected.
func logOverload(l *slog.Logger, e Event) {
	o := e.Overload
	if o == nil {
		return
	}
	st := o.Stats
	if o.Rejecting {
		l.Warn("server started rejecting calls for overload", "breaker", e.Breaker,
			"limit", math.Round(st.Limit*10)/10, "in_flight", st.InFlight, "queued", st.Queued,
			"overloaded", st.Overloaded, "queue_held", st.QueueHeld)
		return
	}
	var total int64
	var sb strings.Builder
	for i, n := range o.Rejected {
		total += n
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString((criticality.CriticalPlus - criticality.Level(i)).String())
		sb.WriteByte('=')
		sb.WriteString(strconv.FormatInt(n, 10))
	}
	l.Info("server stopped rejecting calls for overload", "breaker", e.Breaker,
		"rejected", total, "by_level", sb.String(), "for", e.At.Sub(o.Since).Round(100*time.Millisecond))
}

// events is a breaker's listeners and its shedding state.
type events struct {
	listeners []func(Event)
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

// dropped reports shedding at the breaker's first dropped call, when the
// check at the end of a bucket has not reported it yet, so that a
// listener (a log) hears of it with that call rather than a bucket later.
// The drop counts as the probability seen above 0, for when shedding
// stops.
func (e *events) dropped(b *googleBreaker) {
	e.lastShed.Store(b.now())
	if e.shedding.CompareAndSwap(false, true) {
		e.send(Event{Shedding: true, Breaker: b.name, At: b.wallNow(),
			DropProbability: b.judge(), Reasons: b.reasons.snapshot()})
	}
}

// send calls the listeners with ev, in order.
func (e *events) send(ev Event) { notify(e.listeners, ev) }

// notify calls each listener with ev, in order. A panic in one is recovered
// and the next is called. A listener that calls runtime.Goexit ends the
// goroutine, but the listeners after it are told first.
func notify(listeners []func(Event), ev Event) {
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
