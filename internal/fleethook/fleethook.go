// Package fleethook links package fleet to the breakers of package breaker
// without breaker exporting its plumbing: breaker sets [Of] in its init,
// and fleet calls it.
package fleethook

import (
	"time"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// Link is a breaker's side of its fleet.
type Link interface {
	// Name returns the breaker's name.
	Name() string
	// Window returns the span of the breaker's window.
	Window() time.Duration
	// Grid returns the span of the breaker's buckets and how many the
	// window holds, the live one included.
	Grid() (span time.Duration, size int64)
	// History returns the breaker's finished buckets, as a fleet shares
	// them.
	History() evidence.Shared
	// SetOthers sets the other processes' buckets, added up; the caller
	// has checked that they have the breaker's span and size.
	SetOthers(others evidence.Shared)
	// ClearOthers forgets them.
	ClearOthers()
}

// Of returns b's link to its fleet, if b is one of package breaker's
// breakers. Package breaker sets it in its init.
var Of func(b any) (Link, bool)
