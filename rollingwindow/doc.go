// Package rollingwindow keeps a sum and a count of values over a sliding span
// of time, split into equal buckets.
//
// A [RollingWindow] of size n and interval d covers the last n·d of time.
// Values are added to the bucket that covers now; as time passes, the oldest
// bucket is emptied and reused. Bucket boundaries are aligned to multiples of
// the interval since the window was created, and the window moves lazily,
// whenever it is touched, so there is no background goroutine and nothing to
// close.
//
// Running totals are kept as values are added and buckets expire, so
// [RollingWindow.Totals] costs the same for 10 buckets as for 10,000.
//
// A RollingWindow is safe for concurrent use by multiple goroutines.
package rollingwindow
