package criticality

import (
	"context"
	"fmt"
	"strconv"

	"github.com/srebreaker/srebreaker/internal/levelkey"
	"github.com/srebreaker/srebreaker/internal/levelname"
)

// Level is how much a call matters, the four levels of the SRE book's
// "Handling Overload": when a breaker drops calls, it drops them from the
// lowest level up. The zero value is [Critical], the default.
//
// Carry it in a context with [With]; a breaker's AllowCtx, its Do methods
// ending in Ctx and breaker.Call read it from there. The methods without
// a context, and contexts without a level, ask at [Default]:
// a breaker whose calls all ask at one level behaves as a breaker without
// criticality.
type Level int8

// The four levels, from the highest to the lowest.
const (
	// CriticalPlus is for calls whose failure is seen by a user and hurts
	// the most; they are dropped last.
	CriticalPlus Level = 1
	// Critical is the default: calls whose failure is seen by a user.
	Critical Level = 0
	// SheddablePlus is for calls whose failure is not seen at once and that
	// can be retried later, such as batch work.
	SheddablePlus Level = -1
	// Sheddable is for calls that can fail without harm, such as prefetches;
	// they are dropped first.
	Sheddable Level = -2
)

// Default is the level of a call that names none: [Critical], as
// in the SRE book.
const Default = Critical

// Levels is the number of levels.
const Levels = 4

// Index maps a valid level to 0 (Sheddable) … 3 (CriticalPlus), the
// order in which a breaker keeps them.
func (c Level) Index() int { return int(c - Sheddable) }

// Valid reports whether c is one of the four levels.
func (c Level) Valid() bool { return c >= Sheddable && c <= CriticalPlus }

var criticalityNames = levelname.Names

// String returns the level's name as the SRE book writes it: CRITICAL_PLUS,
// CRITICAL, SHEDDABLE_PLUS or SHEDDABLE; "Level(n)" for a value that
// is not a level.
func (c Level) String() string {
	if !c.Valid() {
		return "Level(" + strconv.Itoa(int(c)) + ")"
	}
	return criticalityNames[c.Index()]
}

// Parse returns the level named s, one of the names
// [Level.String] returns, in any case of its ASCII letters. For anything
// else it returns [Default] and an error that quotes s (cut to 32 bytes).
func Parse(s string) (Level, error) {
	if i, ok := levelname.Index(s); ok {
		return Sheddable + Level(i), nil
	}
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return Default, fmt.Errorf("criticality: %q: want one of CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE", s)
}

// contextKey is the key a level is carried under, shared with the
// server sides' own context (package levelkey).
var contextKey = levelkey.Key

// With returns a copy of ctx that carries c. A c that is not one
// of the four levels is carried as [Default]. A nil ctx is taken
// as context.Background().
func With(ctx context.Context, c Level) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if !c.Valid() {
		c = Default
	}
	return &levelContext{Context: ctx, level: c, uncanceled: neverCanceled(ctx)}
}

// neverCanceled reports whether ctx is one of those never canceled, told
// without a call: context.Background, context.TODO, or a level over one of
// them. ctx.Done() == nil would tell for any context, but may allocate a
// channel.
func neverCanceled(ctx context.Context) bool {
	if c, ok := ctx.(*levelContext); ok {
		return c.uncanceled
	}
	return ctx == context.Background() || ctx == context.TODO()
}

// levelContext is the context With returns: its parent and a level. It is
// what context.WithValue would return, but typed, so that From reads a
// level set last without a call, and Value finds it by comparing a pointer
// in line rather than by the runtime's comparison of two interfaces: a
// call at a level cost 1.42 times a plain one through context.WithValue,
// 1.09 times through levelContext (make bench-peers).
type levelContext struct {
	context.Context
	level Level
	// uncanceled is set when the parent is never canceled (neverCanceled):
	// Err then answers without asking it, as a breaker asks on every call.
	uncanceled bool
}

// Err returns the parent's Err: nil, without a call, for a parent that
// is never canceled.
func (c *levelContext) Err() error {
	if c.uncanceled {
		return nil
	}
	return c.Context.Err()
}

// Value returns the level for the package's key, and asks the parent for
// any other.
func (c *levelContext) Value(key any) any {
	if key == any(contextKey) {
		return c.level
	}
	return c.Context.Value(key)
}

// String names the context as the context package names its own:
// the parent's name, then the level.
func (c *levelContext) String() string {
	parent := "context"
	if s, ok := c.Context.(fmt.Stringer); ok {
		parent = s.String()
	}
	return parent + ".WithValue(criticality, " + c.level.String() + ")"
}

// From returns the level ctx carries, or [Default]
// when it carries none or ctx is nil.
func From(ctx context.Context) Level {
	if c, ok := ctx.(*levelContext); ok { // the level was set last
		return c.level
	}
	return fromValue(ctx)
}

// fromValue is From for a ctx other than a *levelContext: a function of
// its own, so that From is small enough to be inlined where it is called.
func fromValue(ctx context.Context) Level {
	if ctx == nil {
		return Default
	}
	if c, ok := ctx.Value(contextKey).(Level); ok && c.Valid() {
		return c
	}
	return Default
}

// Stats is what a breaker's window holds of one level (breaker.Stats).
type Stats struct {
	// Level is the level.
	Level Level
	// Calls are the calls of this level in the window, admitted calls
	// that finished and dropped ones; Drops are those that were dropped,
	// Successes and Failures the admitted ones, by outcome.
	Calls, Drops, Successes, Failures int64
	// DropProbability is the probability that a call of this level asking
	// now is dropped.
	DropProbability float64

	// TotalSuccesses, TotalFailures and TotalDrops count the same as
	// Successes, Failures and Drops since the breaker was made; they only
	// grow, and the four levels add up to the breaker's totals.
	TotalSuccesses, TotalFailures, TotalDrops int64
}
