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
// # Speed
//
// An add is an atomic add to a lane of the current bucket (see [Lane]),
// plus a read of the clock. Reading the clock is most of it: with
// [WithClockEvery] a busy bucket reads it once in n adds. Under
// contention, two goroutines adding at once, the window spreads over a
// lane per processor, picked through a sync.Pool; the pick (a Get and a
// Put) is then most of an add, and a caller that stripes its writers
// itself and joins a lane per stripe ([RollingWindow.AddLane], for windows
// of integer types) pays the atomic add alone. Package breaker records its
// calls' outcomes so: Add(1) a success, Add(0) a failure, on its
// stripes' lanes.
//
// Measured with
//
//	go test -c -o /tmp/rw.test ./rollingwindow
//	go test -c -o /tmp/breaker.test ./breaker
//	for i in 1 2 3 4 5 6; do
//		/tmp/rw.test -test.run '^$' -test.bench . -test.benchmem -test.count 1
//		/tmp/breaker.test -test.run '^$' -test.bench 'AllowAccept$|AllowAcceptParallel$' -test.benchmem -test.count 1
//	done
//
// the window's benchmarks and the breaker's Allow + Accept alternately, on
// an AMD EPYC, 2 cores (load average 1.5), clock source tsc, go1.26.8
// linux/amd64. Medians of 6 rounds, with benchstat's 95% confidence
// interval; 0 allocs/op throughout:
//
//	Add, clock read on every add             35.4 ns ± 6%
//	Add, clock read on every add, 2          21.8 ns ± 8%
//	Add, WithClockEvery(16)                   6.0 ns ± 5%
//	Add, WithClockEvery(16), 2 goroutines     9.1 ns ± 3%
//	Lane.Add, a lane per goroutine, 2         1.1 ns ± 1%
//	Totals, 10, 40 or 400 buckets       30.8–32.4 ns ± 7%
//	breaker Allow + Accept                   10.7 ns ± 15%
//	breaker Allow + Accept, 2 goroutines     10.8 ns ± 6%
//
// A busy window's Add thus costs about half the breaker's Allow and
// Accept on one goroutine, and less on two.
//
// A RollingWindow is safe for concurrent use by multiple goroutines.
package rollingwindow
