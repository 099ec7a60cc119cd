package breaker

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srebreaker/srebreaker/override"
)

// SetOverride sets o on the breaker, in place of any override it holds,
// from now on the breaker's clock until now plus o.TTL. Calls that ask
// meanwhile are dropped ([override.ShedAll]) or admitted
// ([override.ShedNone]) whatever the window holds; once the TTL has passed
// the breaker decides as before, by itself. Its listeners are told of it
// ([OverrideSet]), on the calling goroutine, before SetOverride returns.
//
// The override is in force for the calls, [Breaker.Stats] and
// [Breaker.Override] that read the breaker's clock before SetAt + TTL, and
// gone for those that read it at or after: the breaker reads its clock on
// every call while an override is set, so the end is exact on its clock,
// and the first reading at or after it tells the listeners it expired
// ([OverrideExpired]). A clock that steps back by less than the window is
// taken to stand still, as the window does; one that steps back further
// ends the override, so that no clock makes it last longer than its TTL of
// the clock's time.
//
// While no override is set, a call makes no memory access for the
// feature: the override is a bit of the state word every call reads
// already, tested only on the path of a breaker that may drop. While one
// is set, each call reads the clock once more.
//
// Of overrides set at once, one is left in force, and the listeners may
// hear of them in either order.
func (b *googleBreaker) SetOverride(o override.Spec) error {
	if err := validateOverride(o); err != nil {
		return err
	}
	b.setOverride(o)
	return nil
}

// ClearOverride ends the breaker's override, if it holds one, and tells
// its listeners ([OverrideCleared], or [OverrideExpired] if its time was
// up already); without one it does nothing.
func (b *googleBreaker) ClearOverride() { b.clearOverride() }

// Override returns the override in force, if any: ok is false when the
// breaker holds none (its last one ended or was cleared). Like a call, it
// reads the clock, and an override whose time is up ends then.
func (b *googleBreaker) Override() (o override.Active, ok bool) { return b.activeOverride() }

// validateOverride checks o's mode and TTL.
func validateOverride(o override.Spec) error {
	if o.Mode != override.ShedAll && o.Mode != override.ShedNone {
		return fmt.Errorf("%w: Mode %v: must be override.ShedAll or override.ShedNone", ErrInvalidOverride, o.Mode)
	}
	if o.TTL <= 0 || o.TTL > override.MaxTTL {
		return fmt.Errorf("%w: TTL %v: must be above 0 and at most %v", ErrInvalidOverride, o.TTL, override.MaxTTL)
	}
	return nil
}

// held is an override set on a breaker; immutable but for drops.
type held struct {
	mode           override.Mode
	reason, by     string
	setAt, expires time.Time
	err            error // what a call dropped by a override.ShedAll override returns, built once
	drops          atomic.Int64
}

// overrideSlot holds a breaker's override. Calls read cur without a lock
// while modeOverride is set in the breaker's mode; writers hold mu, so
// that the bit is set exactly while cur holds an override.
type overrideSlot struct {
	mu  sync.Mutex
	cur atomic.Pointer[held]
}

// inForce reports whether x is in force at now, on a breaker whose window
// is window ns long: before its end, and not before its start by more
// than a window (a clock stepped back further ends it).
func (x *held) inForce(now time.Time, window int64) bool {
	return now.Before(x.expires) && !now.Before(x.setAt.Add(-time.Duration(window)))
}

// active returns x as callers see it.
func (x *held) active() override.Active {
	return override.Active{Mode: x.mode, Reason: x.reason, By: x.by, SetAt: x.setAt, Expires: x.expires,
		Drops: x.drops.Load()}
}

func (b *googleBreaker) setOverride(o override.Spec) {
	now := b.wallNow()
	x := &held{mode: o.Mode, reason: boundReason(o.Reason), by: boundReason(o.By), setAt: now,
		expires: now.Add(o.TTL)}
	if x.mode == override.ShedAll {
		x.err = &forcedError{text: forcedText(b.name, x)}
	}
	b.override.mu.Lock()
	b.override.cur.Store(x)
	b.setMode(modeOverride)
	b.override.mu.Unlock()
	b.tellOverride(OverrideSet, x, now)
}

func (b *googleBreaker) clearOverride() {
	b.override.mu.Lock()
	x := b.override.cur.Swap(nil)
	b.clearMode(modeOverride)
	b.override.mu.Unlock()
	if x == nil {
		return
	}
	now := b.wallNow()
	kind := OverrideCleared
	if !x.inForce(now, b.window) {
		kind = OverrideExpired
	}
	b.tellOverride(kind, x, now)
}

func (b *googleBreaker) activeOverride() (override.Active, bool) {
	if b.mode.Load()&modeOverride == 0 {
		return override.Active{}, false
	}
	x := b.overrideAt(b.wallNow())
	if x == nil {
		return override.Active{}, false
	}
	return x.active(), true
}

// holdsOverride reports whether an override is in force now, without
// ending one whose time is up: for a registry choosing what to forget,
// under its lock, where no listener may be called.
func (b *googleBreaker) holdsOverride() bool {
	x := b.override.cur.Load()
	return x != nil && x.inForce(b.wallNow(), b.window)
}

// overrideAt returns the override in force at now, or nil; one whose time
// is up ends, and the listeners are told.
func (b *googleBreaker) overrideAt(now time.Time) *held {
	x := b.override.cur.Load()
	if x == nil || x.inForce(now, b.window) {
		return x
	}
	b.override.mu.Lock()
	ended := b.override.cur.CompareAndSwap(x, nil)
	if ended {
		b.clearMode(modeOverride)
	}
	b.override.mu.Unlock()
	if ended {
		b.tellOverride(OverrideExpired, x, now)
	}
	return nil
}

// overridden decides a call on stripe s while modeOverride is set: ok is
// false when no override is in force, and the call is decided as usual.
func (b *googleBreaker) overridden(s *stripe) (co *cohort, ok bool, err error) {
	x := b.overrideAt(b.wallNow())
	switch {
	case x == nil:
		return nil, false, nil
	case x.mode == override.ShedAll:
		x.drops.Add(1)
		return nil, true, x.err
	}
	co = s.admitted()
	if b.hang.hanging.Load() { // the call, out, counts against the dependency at once
		b.judge()
	}
	return co, true, nil
}

// tellOverride tells the listeners that x was set, cleared or expired at
// now.
func (b *googleBreaker) tellOverride(kind EventKind, x *held, now time.Time) {
	if b.events == nil {
		return
	}
	a := x.active()
	b.events.send(Event{Kind: kind, Shedding: b.events.shedding.Load(), Breaker: b.name, At: now, Override: &a})
}

// forcedText is the text of the error a call dropped by the override.ShedAll
// override x returns: one line, with who set it, why, and until when.
func forcedText(name string, x *held) string {
	var sb strings.Builder
	sb.WriteString(ErrServiceUnavailable.Error())
	sb.WriteString(" (breaker ")
	sb.WriteString(strconv.Quote(boundReason(name)))
	sb.WriteString(", forced open")
	if x.by != "" {
		sb.WriteString(" by \"") // bounded and escaped already: no quoting twice
		sb.WriteString(x.by)
		sb.WriteByte('"')
	}
	sb.WriteString(" until ")
	sb.WriteString(x.expires.UTC().Format(time.RFC3339))
	if x.reason != "" {
		sb.WriteString(": \"")
		sb.WriteString(x.reason)
		sb.WriteByte('"')
	}
	sb.WriteByte(')')
	return sb.String()
}

// forcedError is returned for a call dropped by a override.ShedAll override. It
// matches ErrServiceUnavailable, as every drop does, and ErrForced.
type forcedError struct {
	text string
}

func (e *forcedError) Error() string { return e.text }

func (e *forcedError) Unwrap() []error { return []error{ErrServiceUnavailable, ErrForced} }
