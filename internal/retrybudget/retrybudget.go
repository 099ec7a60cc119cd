// Package retrybudget reaches the retry budget that package breaker keeps
// on each breaker's window, for package retry and the integrations: the
// budget reads the breaker's own calls and clock, and counts the retries it
// grants on the breaker's own buckets, so it is plumbing of package breaker
// rather than API of it. Package breaker sets the functions when it is
// initialized.
package retrybudget

// Take grants one retry through b, a breaker made by package breaker, when
// the retries granted in its window are fewer than max(floor, ratio × the
// calls its window holds), and counts it in the breaker's live bucket. ok
// is false when b is not such a breaker: it keeps no window to read.
var Take func(b any, ratio float64, floor int) (granted, ok bool)
