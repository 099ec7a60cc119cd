package breaker

import (
	"time"

	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/internal/tuning"
)

// The refinements' settings are not options a user sets: their defaults
// are measured (docs/design/behaviour.md), and only a simulation that measures
// them, or a test, sets them otherwise, through internal/tuning.
func init() {
	tuning.Option = func(k tuning.Knob) any {
		switch k := k.(type) {
		case tuning.Buckets:
			return withBuckets(int(k))
		case tuning.Aggression:
			return withAggression(float64(k))
		case tuning.DropsCounted:
			return withDropsCounted(bool(k))
		case tuning.TrustRecent:
			return withTrustRecent(bool(k))
		case tuning.Evidence:
			return withEvidence(k.Calls, k.Horizon)
		case tuning.Without:
			return withoutRules(evidence.Rules(k))
		}
		return nil
	}
}

// withBuckets sets how many buckets the window is split into: outcomes leave
// the window one bucket at a time. Default [defaultBuckets] (20, so 100 ms
// each at the default window); it must be between 1 and 65,536, and
// window/buckets at least 1 ms.
func withBuckets(buckets int) Option {
	return func(o *options) { o.buckets = buckets }
}

// withAggression sets an exponent on the drop probability: the breaker drops
// with probability p^(1/aggression), where p is the formula's. 1 leaves the
// formula as it is; larger drops more, sooner, for the same ratio of
// failures, and settles with fewer calls per success under overload, while
// a healthy dependency (p = 0) is never throttled whatever the aggression.
// While the dependency says it is overloaded, the breaker judges with
// tuning.OverloadAggression when that is smaller. Default
// [defaultAggression]; it must be a number from 1 to 10.
func withAggression(aggression float64) Option {
	return func(o *options) { o.aggression = aggression }
}

// withDropsCounted sets whether the breaker counts the calls it drops as
// requests in the formula's total, as the SRE book defines requests: the
// drops of each bucket count for at most K−1 per call admitted in that
// bucket. Counted, the calls that reach an overloaded dependency stay near
// K per success instead of rising with the offered rate. The bound keeps
// away the book's drawback, drops that keep a healed dependency shed for
// minutes: a bucket whose admitted calls all succeeded adds nothing to the
// numerator, so drops alone cannot keep the breaker shedding once the
// failures have left the window. Default true.
func withDropsCounted(counted bool) Option {
	return func(o *options) { o.countDrops = counted }
}

// withTrustRecent sets whether the breaker trusts its newest buckets over
// older ones when they agree. When the newest finished buckets and the live
// one hold failures and no success, more than protection of them, the
// dependency is taken to be down: older successes no longer count, and the
// breaker sheds at once instead of waiting for them to leave the window.
// When they hold successes and no failure, more than protection of them,
// the dependency is taken to be up: the breaker drops nothing, instead of
// waiting for older failures to leave the window. Mixed buckets (a
// dependency that fails part of the time) leave the formula as it is,
// unless they hold withEvidence's calls and fail clearly more often than
// the window: see there.
// With withEvidence on, a run of failures must also be unlikely from the
// failure rate of the other calls judged (below one in a million), span a
// window, or have no success beside it to set aside.
// Buckets without outcomes neither extend nor break a run; a window in
// which no call was admitted or dropped ends it. The runs do not depend on
// how often the breaker is read ([Breaker.Stats], a fleet's publisher). Default true.
func withTrustRecent(trust bool) Option {
	return func(o *options) { o.trustRecent = trust }
}

// withEvidence sets how many admitted calls the formula wants to judge
// the dependency on. When the window holds fewer, on light traffic (a
// dependency called twice a second leaves 4 calls in a 2 s window, never
// more failures than protection tolerates), the breaker reads the outcomes
// and drops of older calls too, newest first, until it has calls of them
// or has reached horizon back: in blocks of a quarter of the window over
// the newest two windows or so, of a whole window further back.
//
// With withTrustRecent on, four rules come with it. On heavy traffic,
// when the newest finished bucket and the live one hold calls calls or
// more, and fail more often than the window as a whole by more than three
// standard deviations of a sample of their size, the formula is also
// worked out over those two buckets alone, their drops counted alike, and
// the higher of the two ratios is taken: an overload or an outage that
// begins is judged on its own calls, not outvoted by the window's older
// successes. On light traffic, a dependency taken
// to be down is judged on the window's failures or on up to calls/2 of
// the failures read back for, whichever are more. Once its failing buckets
// have spanned a window (from the first to the newest, none with a
// success), protection no longer applies. A window
// without failures still drops nothing, whatever the older calls held: a
// dependency shed on older evidence gets a call through once a window has
// passed without an admitted failure. After a down run that spanned a
// window, the recovery is judged on its own calls, from its first bucket
// with successes that the formula would not shed over that bucket alone,
// until a bucket of failures alone ends it or it spans the window: its
// first bucket of only successes readmits the dependency, and a healed
// dependency that still fails 1 % of its calls is readmitted within a few
// buckets (docs/design/algorithm.md).
//
// Default [defaultEvidence] (40) within [defaultHorizonWindows] windows
// (1 min at the default window), which a horizon of 0 stands for. calls
// must be at least 0; 0 turns all of this off: the formula then judges on
// the window alone. A horizon must be at least
// the window and at most 1,024 windows. The older calls take 16 bytes per
// block, about 0.8 KB per breaker at the defaults (42 blocks); reading
// them costs a pass over the blocks, only for calls that find failures in
// a window of fewer than calls calls.
func withEvidence(calls int, horizon time.Duration) Option {
	return func(o *options) { o.evidence, o.horizon = calls, horizon }
}

// withoutRules turns rules of the judge off, to measure what each one does
// (docs/design/algorithm.md, "Each rule measured out"). Default none.
func withoutRules(rules evidence.Rules) Option {
	return func(o *options) { o.without = rules }
}
