package breaker

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxOverrideTTL is the longest an override may last: an override is meant
// for an incident, and one forgotten must not outlive the day.
const MaxOverrideTTL = 24 * time.Hour

// OverrideMode is what an operator's override does to a breaker's calls.
// The zero value is no mode: [SetOverride] refuses it.
type OverrideMode int

const (
	// ShedAll drops every call, at every criticality, whatever the
	// breaker's window holds: a breaker forced open. A dropped call returns
	// an error matching both [ErrServiceUnavailable] and [ErrForced], whose
	// text names who set the override and why; it is not recorded in the
	// window, since it says nothing of the dependency, and the breaker
	// judges the dependency afresh when the override ends.
	ShedAll OverrideMode = iota + 1
	// ShedNone admits every call, at every criticality, whatever the
	// breaker's window holds: a breaker forced closed. The calls' outcomes
	// are recorded as usual, so that the window, [Stats] and the drop
	// probability say what the breaker would do without the override.
	ShedNone
)

// String returns "shed_all" or "shed_none", or "OverrideMode(n)" for a
// value that is neither.
func (m OverrideMode) String() string {
	switch m {
	case ShedAll:
		return "shed_all"
	case ShedNone:
		return "shed_none"
	}
	return "OverrideMode(" + strconv.Itoa(int(m)) + ")"
}

// Override is an operator's hand on a breaker during an incident: see
// [SetOverride].
type Override struct {
	// Mode is what the override does: [ShedAll] or [ShedNone].
	Mode OverrideMode
	// TTL is how long the override lasts, from when it is set, on the
	// breaker's clock ([WithClock]): above 0 and at most [MaxOverrideTTL].
	// It has no default, so that no override is set forever by mistake.
	TTL time.Duration
	// Reason says why the override was set, for the error a forced drop
	// returns, for [Stats] and for listeners. Like a failure reason it is
	// kept to at most 256 bytes, cut on a UTF-8 boundary and marked with
	// "…" when longer, control characters escaped; it may be empty.
	Reason string
	// By says who or what set the override (a person, a runbook, a fleet
	// sharer), bounded as Reason is; it may be empty.
	By string
}

// ActiveOverride is an override in force on a breaker, as [OverrideOf],
// [Stats] and [Event] report it.
type ActiveOverride struct {
	// Mode is what the override does.
	Mode OverrideMode
	// Reason and By are the override's, as the breaker keeps them (see
	// [Override]).
	Reason, By string
	// SetAt is when the override was set and Expires when it ends, on the
	// breaker's clock: Expires is SetAt plus the override's TTL.
	SetAt, Expires time.Time
	// Drops counts the calls the override dropped ([ShedAll]) since it was
	// set; they are not in the window's Drops.
	Drops int64
}

// Remaining returns how long the override has left at now: Expires − now,
// or 0 once that is not above 0. A caller that passes an override on (a
// fleet sharer setting it on another process's breaker) sets it there with
// this as its TTL.
func (a ActiveOverride) Remaining(now time.Time) time.Duration {
	return max(0, a.Expires.Sub(now))
}

// overridable is implemented by the breakers an operator can override:
// those made by [New], [MustNew] and registries.
type overridable interface {
	setOverride(o Override)
	clearOverride()
	activeOverride() (ActiveOverride, bool)
}

// SetOverride sets o on b, in place of any override b holds, from now on
// b's clock until now plus o.TTL. Calls that ask b meanwhile are dropped
// ([ShedAll]) or admitted ([ShedNone]) whatever b's window holds; once
// the TTL has passed b decides as before, by itself. b's listeners are
// told of it ([OverrideSet]), on the calling goroutine, before SetOverride
// returns.
//
// The override is in force for the calls, [Stats] and [OverrideOf] that
// read b's clock before SetAt + TTL, and gone for those that read it at
// or after: b reads its clock on every call while an override is set, so
// the end is exact on b's clock, and the first reading at or after it
// tells the listeners it expired ([OverrideExpired]). A clock that steps
// back by less than b's window is taken to stand still, as b's window
// does; one that steps back further ends the override, so that no clock
// makes it last longer than its TTL of the clock's time.
//
// It returns an error wrapping [ErrInvalidOverride], naming the field and
// its value, when o.Mode is neither ShedAll nor ShedNone or o.TTL is not
// above 0 and at most [MaxOverrideTTL]; and one wrapping
// [ErrNotOverridable] when b is not one of this package's breakers ([Nop],
// another implementation, nil). Reason and By longer than their bound are
// cut, not refused: see [Override].
//
// While no override is set, a call makes no memory access for the
// feature: the override is a bit of the state word every call reads
// already, tested only on the path of a breaker that may drop. While one
// is set, each call reads the clock once more.
//
// SetOverride is safe to call concurrently with b's calls and with
// [ClearOverride]; of overrides set at once, one is left in force, and the
// listeners may hear of them in either order.
func SetOverride(b Breaker, o Override) error {
	if err := o.validate(); err != nil {
		return err
	}
	g, err := overridableOf(b)
	if err != nil {
		return err
	}
	g.setOverride(o)
	return nil
}

// ClearOverride ends b's override, if it holds one, and tells b's
// listeners ([OverrideCleared], or [OverrideExpired] if its time was up
// already); without one it does nothing. It returns an error wrapping
// [ErrNotOverridable] when b is not one of this package's breakers. It is
// safe to call concurrently with b's calls and with [SetOverride].
func ClearOverride(b Breaker) error {
	g, err := overridableOf(b)
	if err != nil {
		return err
	}
	g.clearOverride()
	return nil
}

// OverrideOf returns the override in force on b, if any: ok is false when
// b holds none (its last one ended or was cleared) and for breakers that
// cannot hold one ([Nop], other implementations). Like a call, it reads
// b's clock, and an override whose time is up ends then.
func OverrideOf(b Breaker) (o ActiveOverride, ok bool) {
	g, err := overridableOf(b)
	if err != nil {
		return ActiveOverride{}, false
	}
	return g.activeOverride()
}

// overridableOf returns b as a breaker that can hold an override, or an
// error wrapping ErrNotOverridable that names what b is.
func overridableOf(b Breaker) (overridable, error) {
	if g, ok := b.(overridable); ok {
		return g, nil
	}
	if b == nil {
		return nil, fmt.Errorf("%w: nil breaker", ErrNotOverridable)
	}
	return nil, fmt.Errorf("%w: breaker %q is a %T", ErrNotOverridable, boundReason(b.Name()), b)
}

// validate checks o's mode and TTL.
func (o Override) validate() error {
	if o.Mode != ShedAll && o.Mode != ShedNone {
		return fmt.Errorf("%w: Mode %v: must be ShedAll or ShedNone", ErrInvalidOverride, o.Mode)
	}
	if o.TTL <= 0 || o.TTL > MaxOverrideTTL {
		return fmt.Errorf("%w: TTL %v: must be above 0 and at most %v", ErrInvalidOverride, o.TTL, MaxOverrideTTL)
	}
	return nil
}

// override is an override set on a breaker; immutable but for drops.
type override struct {
	mode           OverrideMode
	reason, by     string
	setAt, expires time.Time
	err            error // what a call dropped by a ShedAll override returns, built once
	drops          atomic.Int64
}

// overrideSlot holds a breaker's override. Calls read cur without a lock
// while modeOverride is set in the breaker's mode; writers hold mu, so
// that the bit is set exactly while cur holds an override.
type overrideSlot struct {
	mu  sync.Mutex
	cur atomic.Pointer[override]
}

// inForce reports whether x is in force at now, on a breaker whose window
// is window ns long: before its end, and not before its start by more
// than a window (a clock stepped back further ends it).
func (x *override) inForce(now time.Time, window int64) bool {
	return now.Before(x.expires) && !now.Before(x.setAt.Add(-time.Duration(window)))
}

// active returns x as callers see it.
func (x *override) active() ActiveOverride {
	return ActiveOverride{Mode: x.mode, Reason: x.reason, By: x.by, SetAt: x.setAt, Expires: x.expires,
		Drops: x.drops.Load()}
}

func (b *googleBreaker) setOverride(o Override) {
	now := b.wallNow()
	x := &override{mode: o.Mode, reason: boundReason(o.Reason), by: boundReason(o.By), setAt: now,
		expires: now.Add(o.TTL)}
	if x.mode == ShedAll {
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

func (b *googleBreaker) activeOverride() (ActiveOverride, bool) {
	if b.mode.Load()&modeOverride == 0 {
		return ActiveOverride{}, false
	}
	x := b.overrideAt(b.wallNow())
	if x == nil {
		return ActiveOverride{}, false
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
func (b *googleBreaker) overrideAt(now time.Time) *override {
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
	case x.mode == ShedAll:
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
func (b *googleBreaker) tellOverride(kind EventKind, x *override, now time.Time) {
	if b.events == nil {
		return
	}
	a := x.active()
	b.events.send(Event{Kind: kind, Shedding: b.events.shedding.Load(), Breaker: b.name, At: now, Override: &a})
}

// forcedText is the text of the error a call dropped by the ShedAll
// override x returns: one line, with who set it, why, and until when.
func forcedText(name string, x *override) string {
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

// forcedError is returned for a call dropped by a ShedAll override. It
// matches ErrServiceUnavailable, as every drop does, and ErrForced.
type forcedError struct {
	text string
}

func (e *forcedError) Error() string { return e.text }

func (e *forcedError) Unwrap() []error { return []error{ErrServiceUnavailable, ErrForced} }
