// Package tuning sets the refinements of the breaker's formula that are not
// options of package breaker: how many buckets the window holds, the
// aggression exponent, whether drops are counted, trust in recent buckets
// and the evidence read back on light traffic. Their defaults are measured
// (docs/design/behaviour.md); the simulator, the benchmarks and the tests that
// measure them set them otherwise. Each function returns a breaker.Option,
// typed any because package breaker imports this one.
package tuning

import (
	"time"

	"github.com/srebreaker/srebreaker/internal/evidence"
)

// The measured defaults (docs/design/behaviour.md).
const (
	DefaultBuckets        = 20  // buckets in the window: 100 ms each at the default window
	DefaultAggression     = 1.5 // exponent on the drop probability
	OverloadAggression    = 1.1 // the exponent, at most, while the dependency says it is overloaded
	DefaultEvidence       = 40  // calls the formula reads back for on light traffic
	DefaultHorizonWindows = 30  // how far back, in windows, it reads for them (1 min)
)

// Knob is one of the settings below.
type Knob interface{ knob() }

// Buckets is how many buckets the window is split into (default 20; 1 to
// 65,536, each at least 1 ms).
type Buckets int

// Aggression is the exponent on the drop probability (default 1.5; 1 to 10).
type Aggression float64

// DropsCounted says whether drops count as requests (default true).
type DropsCounted bool

// TrustRecent says whether the newest agreeing buckets are trusted over
// older ones (default true).
type TrustRecent bool

// Evidence is how many admitted calls the formula reads back for on light
// traffic, and how far (default 40 calls, 30 windows; 0 calls for none, a
// 0 horizon for the default).
type Evidence struct {
	Calls   int
	Horizon time.Duration
}

// Without turns rules of the judge off, to measure what each one does
// (the simulator's -ablate); none by default.
type Without evidence.Rules

func (Buckets) knob()      {}
func (Aggression) knob()   {}
func (DropsCounted) knob() {}
func (TrustRecent) knob()  {}
func (Evidence) knob()     {}
func (Without) knob()      {}

// Option returns the breaker.Option that sets k. Package breaker sets it
// when it is initialized.
var Option func(k Knob) any
