// Package rollingwindow keeps a sum and a count of values over a sliding span
// of time, split into equal buckets.
//
// A [RollingWindow] of size n and interval d covers the last n·d of time.
// Values are added to the bucket that covers now; as time passes, the oldest
// bucket is emptied and reused. Bucket boundaries are aligned to multiples of
// the interval since the window's start (when it was created, or the time
// given to [WithStart]), and the window moves lazily, whenever it is
// touched, so there is no background goroutine and nothing to close.
//
// Every method that reads the clock has an At form taking a time.Time and
// an AtOffset form taking the time since the window's start. The offset
// forms are for callers on the hot path: windows made with one start take
// the same offsets, so one reading of time.Since(start) serves them all,
// without converting to a time.Time and back.
//
// Running totals are kept as values are added and buckets expire, so
// [RollingWindow.Totals] costs the same for 10 buckets as for 10,000.
//
// A RollingWindow is safe for concurrent use by multiple goroutines.
package rollingwindow
