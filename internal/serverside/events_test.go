package serverside

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/transporttest"
	"github.com/srebreaker/srebreaker/override"
)

// heard collects the overload events a breaker's listener hears. An
// event may come from the limiter's stall timer, which the mock clock
// runs on a goroutine of its own: next waits for one.
type heard struct {
	mu     sync.Mutex
	events []breaker.Event
}

func (h *heard) listen(e breaker.Event) {
	if e.Kind != breaker.OverloadChanged {
		return
	}
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
}

// take returns the events heard since it was last called.
func (h *heard) take() []breaker.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.events
	h.events = nil
	return e
}

// next waits for the next event and returns it, and any other heard.
func (h *heard) next(t *testing.T) []breaker.Event {
	t.Helper()
	guard := time.Now().Add(10 * time.Second) // against a hang, not a wait for time to pass
	for time.Now().Before(guard) {
		if e := h.take(); len(e) > 0 {
			return e
		}
		runtime.Gosched()
	}
	t.Fatal("no event")
	return nil
}

// newTiedLimiter returns the overload limit of a key tied to a breaker
// with listener, both on one mock clock.
func newTiedLimiter(t *testing.T, listener func(breaker.Event)) (*Limiter, breaker.Breaker, *clock.Mock) {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b, err := breaker.New(breaker.WithClock(mock), breaker.WithName("server:GET /"), breaker.WithListener(listener))
	require.NoError(t, err)
	var o Overload
	return o.Limiter(b, mock), b, mock
}

// The limit tells the breaker's listeners once when it starts rejecting,
// however many calls it rejects, and once when none has been rejected for
// breaker.OverloadQuiet, with what it rejected meanwhile by level.
func TestLimiter_tellsWhenItStartsAndStopsRejecting(t *testing.T) {
	var h heard
	l, _, mock := newTiedLimiter(t, h.listen)
	l.Force(4, false)
	slots := fill(t, l, 4)
	l.Force(4, true) // the queue holds √4 = 2 calls of the lowest level, one more per level above
	start := mock.Now()
	a := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	b := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	assert.Empty(t, h.take(), "no call rejected yet")

	_, err := l.Acquire(context.Background(), criticality.Sheddable)
	require.ErrorIs(t, err, ErrOverloaded)
	events := h.take()
	require.Len(t, events, 1, "the first rejection starts it")
	e := events[0]
	assert.Equal(t, breaker.OverloadChanged, e.Kind)
	assert.Equal(t, "server:GET /", e.Breaker)
	assert.Equal(t, start, e.At)
	require.NotNil(t, e.Overload)
	assert.True(t, e.Overload.Rejecting)
	assert.Equal(t, start, e.Overload.Since)
	assert.Equal(t, [4]int64{0, 0, 0, 1}, e.Overload.Rejected)
	assert.Equal(t, breaker.OverloadStats{Limit: 4, InFlight: 4, Queued: 2, Overloaded: true,
		Rejected: [4]int64{0, 0, 0, 1}}, e.Overload.Stats)

	mock.Add(500 * time.Millisecond)
	c := acquireAsync(t, l, context.Background(), criticality.Critical) // takes the oldest SHEDDABLE's room
	assert.ErrorIs(t, (<-a).err, ErrOverloaded)
	_, err = l.Acquire(context.Background(), criticality.Sheddable)
	require.ErrorIs(t, err, ErrOverloaded)
	assert.Empty(t, h.take(), "rejections go on: nothing more to tell")

	// The handlers drain the queue; no call is rejected from here on.
	for _, s := range slots {
		s.Release(true)
	}
	for _, w := range []<-chan acquired{b, c} {
		got := <-w
		require.NoError(t, got.err)
		got.slot.Release(true)
	}
	last := mock.Now() // its tick, 100 ms long, starts now
	mock.Add(breaker.OverloadQuiet + tickLength - time.Millisecond)
	l.Stats()
	assert.Empty(t, h.take(), "not quiet for long enough: the tick of the last rejection is 2 s back")
	mock.Add(time.Millisecond)
	l.Stats() // an exporter's read tells it, as a call would
	events = h.next(t)
	require.Len(t, events, 1)
	e = events[0]
	assert.False(t, e.Overload.Rejecting)
	assert.Equal(t, start, e.Overload.Since)
	assert.Equal(t, last.Add(breaker.OverloadQuiet+tickLength), e.At)
	assert.Equal(t, [4]int64{0, 0, 0, 3}, e.Overload.Rejected, "what it rejected since it started")
	l.Stats()
	assert.Empty(t, h.take(), "told once")

	// It starts again with the next rejection, its count from zero.
	l.Force(4, true)
	fill(t, l, 4)
	acquireAsync(t, l, context.Background(), criticality.CriticalPlus)
	acquireAsync(t, l, context.Background(), criticality.CriticalPlus)
	acquireAsync(t, l, context.Background(), criticality.CriticalPlus)
	acquireAsync(t, l, context.Background(), criticality.CriticalPlus)
	acquireAsync(t, l, context.Background(), criticality.CriticalPlus)
	_, err = l.Acquire(context.Background(), criticality.Critical)
	require.ErrorIs(t, err, ErrOverloaded)
	events = h.take()
	require.Len(t, events, 1)
	assert.True(t, events[0].Overload.Rejecting)
	assert.Equal(t, [4]int64{0, 1, 0, 0}, events[0].Overload.Rejected)
	assert.Equal(t, [4]int64{0, 1, 0, 3}, events[0].Overload.Stats.Rejected, "Stats count since the limit was made")
}

// A listener runs outside the limit's lock: it may read the figures, of
// the limit or of the breaker, which carry them.
func TestLimiter_tellsOutsideItsLock(t *testing.T) {
	var b breaker.Breaker
	var read []breaker.OverloadStats
	l, b, _ := newTiedLimiter(t, func(e breaker.Event) {
		if e.Kind == breaker.OverloadChanged {
			read = append(read, *b.Stats().Overload)
		}
	})
	l.Force(1, true)
	fill(t, l, 1)
	acquireAsync(t, l, context.Background(), criticality.Sheddable)
	_, err := l.Acquire(context.Background(), criticality.Sheddable)
	require.ErrorIs(t, err, ErrOverloaded)
	require.Len(t, read, 1)
	assert.Equal(t, [4]int64{0, 0, 0, 1}, read[0].Rejected)
}

// A clock stepped back holds the rejections on until it is
// breaker.OverloadQuiet past the last one again: no stop is told early,
// and none twice.
func TestLimiter_aClockSteppedBackHoldsTheRejectionsOn(t *testing.T) {
	var h heard
	l, _, mock := newTiedLimiter(t, h.listen)
	l.Force(1, true)
	fill(t, l, 1)
	acquireAsync(t, l, context.Background(), criticality.Sheddable)
	last := mock.Now()
	_, err := l.Acquire(context.Background(), criticality.Sheddable)
	require.ErrorIs(t, err, ErrOverloaded)
	require.Len(t, h.take(), 1)
	mock.Set(last.Add(-time.Hour))
	l.Stats()
	mock.Set(last.Add(-time.Hour + breaker.OverloadQuiet + tickLength))
	l.Stats()
	assert.Empty(t, h.take())
	mock.Set(last.Add(breaker.OverloadQuiet + tickLength))
	l.Stats()
	events := h.next(t)
	require.Len(t, events, 1)
	assert.False(t, events[0].Overload.Rejecting)
}

// A breaker without a listener is told nothing, and the limit notes
// nothing to tell.
func TestLimiter_tellsNothingWithoutAListener(t *testing.T) {
	mock := clock.NewMock()
	b, err := breaker.New(breaker.WithClock(mock))
	require.NoError(t, err)
	var o Overload
	l := o.Limiter(b, mock)
	assert.Nil(t, l.tell.Load())
	l.Force(1, true)
	fill(t, l, 1)
	acquireAsync(t, l, context.Background(), criticality.Sheddable)
	_, err = l.Acquire(context.Background(), criticality.Sheddable)
	require.ErrorIs(t, err, ErrOverloaded)
	l.mu.Lock()
	assert.Zero(t, l.nToTell)
	l.mu.Unlock()
}

// A breaker's logger logs the start at level Warn, with the limit's
// figures, and the stop at level Info, with what was rejected, in all,
// by level and over how long.
func TestLimiter_eventsLogged(t *testing.T) {
	var buf transporttest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	mock := clock.NewMock()
	var h heard
	b, err := breaker.New(breaker.WithClock(mock), breaker.WithName("server:GET /"), breaker.WithLogger(logger),
		breaker.WithListener(h.listen)) // told after the logger

	require.NoError(t, err)
	var o Overload
	l := o.Limiter(b, mock)
	l.Force(1, true)
	s := fill(t, l, 1)[0]
	w := acquireAsync(t, l, context.Background(), criticality.Sheddable)
	_, err = l.Acquire(context.Background(), criticality.Sheddable)
	require.ErrorIs(t, err, ErrOverloaded)
	mock.Add(500 * time.Millisecond)
	c := acquireAsync(t, l, context.Background(), criticality.Critical) // takes the SHEDDABLE call's room
	assert.ErrorIs(t, (<-w).err, ErrOverloaded)
	s.Release(true)
	got := <-c
	require.NoError(t, got.err)
	got.slot.Release(true)
	mock.Add(breaker.OverloadQuiet + tickLength)
	l.Stats()
	var events []breaker.Event
	for len(events) < 2 { // the start and the stop, each logged before heard
		events = append(events, h.next(t)...)
	}
	assert.Equal(t, `level=WARN msg="server started rejecting calls for overload" breaker="server:GET /" limit=1 in_flight=1 queued=1 overloaded=true queue_held=false
level=INFO msg="server stopped rejecting calls for overload" breaker="server:GET /" rejected=2 by_level="CRITICAL_PLUS=0 CRITICAL=0 SHEDDABLE_PLUS=0 SHEDDABLE=2" for=2.6s
`, buf.String())
}

// ignoreCounter is a promise that counts how often it was given up.
type ignoreCounter struct{ ignored *atomic.Int32 }

func (ignoreCounter) Accept()       {}
func (ignoreCounter) Reject(string) {}
func (c ignoreCounter) Ignore()     { c.ignored.Add(1) }

// AcquireFor keeps the promise of a call let in at once; a call that
// waits gives it up, once, as it joins the queue, and takes a new one
// from the breaker once let in; a probe keeps its own; a call rejected,
// or whose caller left, gives up the promise it holds then.
func TestLimiter_AcquireFor(t *testing.T) {
	l, b, _ := newTiedLimiter(t, func(breaker.Event) {})
	ctx := context.Background()
	l.Force(1, false)
	var ignored atomic.Int32
	p := ignoreCounter{&ignored}
	s, got, err := l.AcquireFor(ctx, criticality.Default, b, p, false)
	require.NoError(t, err)
	assert.Equal(t, p, got, "let in at once: the same promise")

	type result struct {
		s   Slot
		p   any
		err error
	}
	wait := func(p ignoreCounter, probe bool) <-chan result {
		ch := make(chan result, 1)
		before := l.Stats().Queued
		go func() {
			s, got, err := l.AcquireFor(ctx, criticality.Default, b, p, probe)
			ch <- result{s, got, err}
		}()
		for l.Stats().Queued == before || !probe && p.ignored.Load() == 0 {
			runtime.Gosched() // on its way to the queue, and to give p up
		}
		return ch
	}
	var ignored2 atomic.Int32
	ch := wait(ignoreCounter{&ignored2}, false)
	assert.Equal(t, int32(1), ignored2.Load(), "given up as it joined the queue")
	s.Release(true)
	r := <-ch
	require.NoError(t, r.err)
	assert.NotEqual(t, ignoreCounter{&ignored2}, r.p, "a new promise of the breaker's")
	require.NotNil(t, r.p)
	assert.Equal(t, int32(1), ignored2.Load())

	// A probe waits with its own.
	var ignored3 atomic.Int32
	ch = wait(ignoreCounter{&ignored3}, true)
	r.s.Release(true)
	r = <-ch
	require.NoError(t, r.err)
	assert.Equal(t, ignoreCounter{&ignored3}, r.p)
	assert.Zero(t, ignored3.Load())

	// The breaker drops the call let in: its slot is given back.
	var ignored4 atomic.Int32
	ch = wait(ignoreCounter{&ignored4}, false)
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Hour}))
	r.s.Release(true)
	r = <-ch
	assert.ErrorIs(t, r.err, breaker.ErrServiceUnavailable)
	assert.Nil(t, r.p)
	assert.Equal(t, int32(1), ignored4.Load())
	assert.Zero(t, l.Stats().InFlight, "the slot given back")
	b.ClearOverride()

	// A call rejected at once gives its promise up; so does one rejected
	// as it waits, once.
	s, _, err = l.AcquireFor(ctx, criticality.Default, b, p, false)
	require.NoError(t, err)
	l.Force(1, true) // the queue holds one SHEDDABLE call, one more a level up
	var waited, atOnce, critical atomic.Int32
	level := criticality.Sheddable
	chWaited := make(chan error, 1)
	go func() {
		_, _, err := l.AcquireFor(ctx, level, b, ignoreCounter{&waited}, false)
		chWaited <- err
	}()
	for waited.Load() == 0 {
		runtime.Gosched() // on its way to the queue
	}
	_, _, err = l.AcquireFor(ctx, level, b, ignoreCounter{&atOnce}, false)
	assert.ErrorIs(t, err, ErrOverloaded)
	assert.Equal(t, int32(1), atOnce.Load())
	chCritical := make(chan result, 1)
	go func() { // takes the room of the SHEDDABLE call waiting
		s, got, err := l.AcquireFor(ctx, criticality.CriticalPlus, b, ignoreCounter{&critical}, false)
		chCritical <- result{s, got, err}
	}()
	assert.ErrorIs(t, <-chWaited, ErrOverloaded)
	assert.Equal(t, int32(1), waited.Load(), "given up once")
	s.Release(true)
	r = <-chCritical
	require.NoError(t, r.err)
	assert.Equal(t, int32(1), critical.Load())
	r.s.Release(true)
}
