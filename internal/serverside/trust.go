package serverside

import (
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/levelname"
)

// Policy is the rule by which a server finds the level it serves a call
// at, and so whether the criticality a caller claims counts. R is the
// transport's view of an incoming call (an *http.Request; a gRPC call's
// context and method). The zero value ignores the claim: every call is at
// [criticality.Default].
//
// What a caller claims about itself is believed only across a boundary
// the server says it trusts ([Trust]), and then capped; otherwise it is
// ignored (the zero Policy) or the server decides ([Decided]).
type Policy[R any] struct {
	kind policyKind
	max  criticality.Level         // Trust's
	fn   func(R) criticality.Level // Decided's
}

type policyKind int8

const (
	ignoreClaim policyKind = iota
	trustClaim
	decided
)

// Trust returns a policy that serves a call at the level it claims,
// capped at max: a call that claims more is served at max, never refused
// for it; a call that claims nothing, or something that is not a level,
// is at [criticality.Default], capped at max too.
func Trust[R any](max criticality.Level) Policy[R] {
	return Policy[R]{kind: trustClaim, max: max}
}

// Decided returns a policy that serves a call at the level f gives; a
// value that is not one of the four levels is taken as
// [criticality.Default].
func Decided[R any](f func(R) criticality.Level) Policy[R] {
	return Policy[R]{kind: decided, fn: f}
}

// Level returns the level p serves r at, claimed reading the level r
// claims: always one of the four levels, [criticality.Default] for a
// policy [Policy.Invalid] finds wrong. A panic in Decided's function goes
// on up.
func (p Policy[R]) Level(r R, claimed func(R) criticality.Level) criticality.Level {
	var c criticality.Level
	switch p.kind {
	case trustClaim:
		if !p.max.Valid() {
			return criticality.Default
		}
		c = min(claimed(r), p.max)
	case decided:
		if p.fn != nil {
			c = p.fn(r)
		}
	default:
		return criticality.Default
	}
	if !c.Valid() {
		return criticality.Default
	}
	return c
}

// String describes p as the code that makes it, for error messages:
// trust and ignore are the names the transport gives Trust and the zero
// policy ("TrustHeader", "IgnoreMetadata"); Decided is "LevelFunc".
func (p Policy[R]) String(trust, ignore string) string {
	switch p.kind {
	case trustClaim:
		if p.max.Valid() {
			return trust + "(criticality." + levelName(p.max) + ")"
		}
		return trust + "(criticality." + p.max.String() + ")"
	case decided:
		if p.fn == nil {
			return "LevelFunc(nil)"
		}
		return "LevelFunc(f)"
	}
	return ignore + "()"
}

// Invalid returns what is wrong with p, or "".
func (p Policy[R]) Invalid() string {
	switch {
	case p.kind == trustClaim && !p.max.Valid():
		return "max must be one of the four levels, criticality.CriticalPlus to criticality.Sheddable"
	case p.kind == decided && p.fn == nil:
		return "function must not be nil"
	}
	return ""
}

// Check returns what is wrong with the option WithCriticalityPolicy(p),
// or "": set says whether it was given to a constructor of side s, which
// must be a server's; clientText says, after "applies to", which
// constructors take it instead, and why a client's does not; text is how
// p reads in the message ([Policy.String]).
func (p Policy[R]) Check(s Side, set bool, text, clientText string) string {
	switch {
	case s == ClientSide && set:
		return "WithCriticalityPolicy applies to " + clientText
	case p.Invalid() != "":
		return "WithCriticalityPolicy(" + text + "): " + p.Invalid()
	}
	return ""
}

// levelName returns the Go name of a valid level.
func levelName(c criticality.Level) string {
	switch c {
	case criticality.CriticalPlus:
		return "CriticalPlus"
	case criticality.Critical:
		return "Critical"
	case criticality.SheddablePlus:
		return "SheddablePlus"
	}
	return "Sheddable"
}

// Claimed reads a level a caller claims, as a header or metadata value
// carries it: [criticality.Default] for none ("") or a value that is not
// a level's name.
func Claimed(v string) criticality.Level {
	if i, ok := levelname.Index(v); ok {
		return criticality.Sheddable + criticality.Level(i)
	}
	return criticality.Default
}
