package breaker

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// EventKind says what an [Event] reports.
type EventKind int

const (
	// SheddingStarted: the drop probability left 0.
	SheddingStarted EventKind = iota + 1
	// SheddingStopped: the drop probability has been 0 for a whole window.
	SheddingStopped
	// CallDropped: a call was dropped; sent only to breakers made with
	// [WithDropEvents].
	CallDropped
)

// String returns the kind's name, such as "shedding started".
func (k EventKind) String() string {
	switch k {
	case SheddingStarted:
		return "shedding started"
	case SheddingStopped:
		return "shedding stopped"
	case CallDropped:
		return "call dropped"
	}
	return "unknown event"
}

// Event is what a [Listener] is told.
type Event struct {
	Kind EventKind
	// Breaker is the breaker's name.
	Breaker string
	// At is when the breaker saw it, on the breaker's clock.
	At time.Time
	// DropProbability is the breaker's drop probability then.
	DropProbability float64
	// Reasons holds the last failure reasons, newest first, for
	// SheddingStarted; nil for the other kinds.
	Reasons []Reason
}

// Listener is told of a breaker's events. Listeners run one event at a time,
// in the order the events happened, on a goroutine of the package's, never
// on a caller's and never under a breaker's lock: a listener may call into
// the breaker. A slow listener delays the events after it, never a call;
// when more than [EventQueue] events wait, new ones are lost and counted by
// [EventsLost]. A panic in a listener is recovered and the event goes on to
// the next listener.
type Listener func(Event)

// EventQueue is how many events may wait for listeners.
const EventQueue = 4096

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

// WithDropEvents sets whether listeners are also told of each dropped call
// ([CallDropped]). Default false. An event costs a read of the clock and a
// send on the event queue per drop.
func WithDropEvents(enabled bool) Option {
	return func(o *options) { o.dropEvents = enabled }
}

// WithLogger logs shedding starting (at level Warn, with the drop
// probability and the last failure reasons) and stopping (at level Info)
// to l, with the breaker's name as the attribute "breaker". Since shedding
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
		switch e.Kind {
		case SheddingStarted:
			texts := make([]string, len(e.Reasons))
			for i, r := range e.Reasons {
				texts[i] = r.Text
			}
			l.Warn("breaker started shedding", "breaker", e.Breaker,
				"drop_probability", e.DropProbability, "reasons", texts)
		case SheddingStopped:
			l.Info("breaker stopped shedding", "breaker", e.Breaker)
		}
	}
}

// events is a breaker's listeners and its shedding state.
type events struct {
	listeners []Listener
	drops     bool          // tell of each drop
	window    time.Duration // how long the probability stays 0 before shedding stops

	shedding atomic.Bool
	lastShed atomic.Int64 // window time when the probability was last seen above 0
}

// bucketTurned looks for a change of shedding; the goroutine that moved the
// window to a new bucket calls it, without locks held.
func (e *events) bucketTurned(b *googleBreaker, now time.Duration) {
	p := b.probability(now)
	if p > 0 {
		e.lastShed.Store(int64(now))
		if e.shedding.CompareAndSwap(false, true) {
			e.send(Event{Kind: SheddingStarted, Breaker: b.name, At: b.wallNow(), DropProbability: p,
				Reasons: b.reasons.snapshot()})
		}
		return
	}
	if e.shedding.Load() && now-time.Duration(e.lastShed.Load()) >= e.window &&
		e.shedding.CompareAndSwap(true, false) {
		e.send(Event{Kind: SheddingStopped, Breaker: b.name, At: b.wallNow()})
	}
}

// dropped tells of a dropped call, if asked to.
func (e *events) dropped(b *googleBreaker, p float64) {
	if e.drops {
		e.send(Event{Kind: CallDropped, Breaker: b.name, At: b.wallNow(), DropProbability: p})
	}
}

func (e *events) send(ev Event) { dispatch.send(delivery{e.listeners, ev}) }

// delivery is an event and who to tell.
type delivery struct {
	listeners []Listener
	event     Event
}

// dispatcher runs listeners on a goroutine that lives while events wait.
type dispatcher struct {
	queue   chan delivery
	running atomic.Bool
	lost    atomic.Uint64
}

var dispatch = &dispatcher{queue: make(chan delivery, EventQueue)}

// EventsLost returns how many events were lost since the process started
// because [EventQueue] events were already waiting for listeners.
func EventsLost() uint64 { return dispatch.lost.Load() }

// send queues d without blocking, and makes sure a goroutine delivers it.
func (d *dispatcher) send(dl delivery) {
	select {
	case d.queue <- dl:
	default:
		d.lost.Add(1)
		return
	}
	if d.running.CompareAndSwap(false, true) {
		go d.run()
	}
}

// run delivers until the queue is empty.
func (d *dispatcher) run() {
	for {
		select {
		case dl := <-d.queue:
			for _, l := range dl.listeners {
				deliver(l, dl.event)
			}
		default:
			d.running.Store(false)
			// An event sent between the empty queue and the store found the
			// goroutine still running: take it on, unless another started.
			if len(d.queue) == 0 || !d.running.CompareAndSwap(false, true) {
				return
			}
		}
	}
}

// deliver calls l, recovering from a panic in it.
func deliver(l Listener, e Event) {
	defer func() { _ = recover() }()
	l(e)
}
