package breaker

// Totals returns the accepts and the total a breaker made by New holds in
// its window, for tests of what was recorded.
func Totals(b Breaker) (accepts, total int64) {
	s := b.(*googleBreaker).Stats()
	return s.Successes, s.Successes + s.Failures
}

// Drops returns the drops a breaker made by New holds in its window.
func Drops(b Breaker) int64 {
	return b.(*googleBreaker).Stats().Drops
}

// The refinements' settings, which internal/tuning sets outside this
// package's tests.
var (
	WithBuckets      = withBuckets
	WithAggression   = withAggression
	WithDropsCounted = withDropsCounted
	WithTrustRecent  = withTrustRecent
	WithEvidence     = withEvidence
)

const (
	DefaultBuckets        = defaultBuckets
	DefaultAggression     = defaultAggression
	DefaultEvidence       = defaultEvidence
	DefaultHorizonWindows = defaultHorizonWindows
)

// Keyed looks name up in r as an integration does, for a name that comes
// from outside: the breaker counts toward r's limit.
func Keyed(r *Registry, name string) Breaker { return r.keyed(name) }
