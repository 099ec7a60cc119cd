// Package override describes an operator's hand on a breaker during an
// incident: force it to drop every call ([ShedAll]) or to admit every call
// ([ShedNone]) for a limited time, whatever its window holds.
//
// The types here are plain values; a breaker takes a [Spec] through its
// SetOverride method and reports the override in force as an [Active]
// (breaker.Breaker's Override method, its Stats, its events):
//
//	err := b.SetOverride(override.Spec{
//		Mode:   override.ShedAll,
//		TTL:    15 * time.Minute,
//		Reason: "INC-4211: payments is down, stop the retries",
//		By:     "alice",
//	})
//
// docs/guide/overrides.md in the repository has the operator's guide.
package override

import (
	"strconv"
	"time"
)

// MaxTTL is the longest an override may last: an override is meant for an
// incident, and one forgotten must not outlive the day.
const MaxTTL = 24 * time.Hour

// Mode is what an override does to a breaker's calls. The zero value is no
// mode: a breaker refuses a Spec without one.
type Mode int

const (
	// ShedAll drops every call, at every criticality, whatever the
	// breaker's window holds: a breaker forced open. A dropped call returns
	// an error matching both breaker.ErrServiceUnavailable and
	// breaker.ErrForced, whose text names who set the override and why; it
	// is not recorded in the window, since it says nothing of the
	// dependency, and the breaker judges the dependency afresh when the
	// override ends.
	ShedAll Mode = 1
	// ShedNone admits every call, at every criticality, whatever the
	// breaker's window holds: a breaker forced closed. The calls' outcomes
	// are recorded as usual, so that the window, the breaker's stats and
	// its drop probability say what it would do without the override.
	ShedNone Mode = 2
)

// String returns "shed_all" or "shed_none", or "Mode(n)" for a value that
// is neither.
func (m Mode) String() string {
	switch m {
	case ShedAll:
		return "shed_all"
	case ShedNone:
		return "shed_none"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Spec is an override to set on a breaker (breaker.Breaker's SetOverride).
type Spec struct {
	// Mode is what the override does: [ShedAll] or [ShedNone].
	Mode Mode
	// TTL is how long the override lasts, from when it is set, on the
	// breaker's clock: above 0 and at most [MaxTTL]. It has no default, so
	// that no override is set forever by mistake.
	TTL time.Duration
	// Reason says why the override was set, for the error a forced drop
	// returns, for the breaker's stats and for its listeners. Like a
	// failure reason it is kept to at most 256 bytes, cut on a UTF-8
	// boundary and marked with "…" when longer, control characters
	// escaped; it may be empty.
	Reason string
	// By says who or what set the override (a person, a runbook, a fleet
	// sharer), bounded as Reason is; it may be empty.
	By string
}

// Active is an override in force on a breaker, as the breaker's Override
// method, its stats and its events report it.
type Active struct {
	// Mode is what the override does.
	Mode Mode
	// Reason and By are the override's, as the breaker keeps them (see
	// [Spec]).
	Reason, By string
	// SetAt is when the override was set and Expires when it ends, on the
	// breaker's clock: Expires is SetAt plus the override's TTL.
	SetAt, Expires time.Time
	// Drops counts the calls the override dropped ([ShedAll]) since it was
	// set; they are not in the window's drops.
	Drops int64
}

// Remaining returns how long the override has left at now: Expires − now,
// or 0 once that is not above 0. A caller that passes an override on (a
// fleet sharer setting it on another process's breaker) sets it there with
// this as its TTL.
func (a Active) Remaining(now time.Time) time.Duration {
	return max(0, a.Expires.Sub(now))
}
