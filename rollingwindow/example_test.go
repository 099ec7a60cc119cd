package rollingwindow_test

import (
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/rollingwindow"
)

func ExampleRollingWindow_Add() {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))

	// Three buckets of one second: the window covers the last three seconds.
	w, err := rollingwindow.New[int64](3, time.Second, rollingwindow.WithClock(mock))
	if err != nil {
		panic(err)
	}
	w.Add(1)
	w.Add(0)
	mock.Add(time.Second)
	w.Add(1)

	sum, count := w.Totals()
	fmt.Println("sum", sum, "count", count)

	mock.Add(2 * time.Second) // the first bucket expires
	w.Reduce(func(b rollingwindow.Bucket[int64]) {
		fmt.Printf("%+v\n", b)
	})
	// Output:
	// sum 2 count 3
	// {Sum:1 Count:1}
	// {Sum:0 Count:0}
	// {Sum:0 Count:0}
}

// Windows that share a start take the same offsets, so that one reading of
// the clock serves them all: here the offset since the start, as a caller
// on the system clock would take it from time.Since(start).
func ExampleRollingWindow_AddAtOffset() {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	calls, _ := rollingwindow.New[int64](10, 100*time.Millisecond, rollingwindow.WithStart(start))
	drops, _ := rollingwindow.New[int64](10, 100*time.Millisecond, rollingwindow.WithStart(start))

	for i := range 5 {
		d := time.Duration(i) * 150 * time.Millisecond // the offset of each call
		calls.AddAtOffset(d, 1)
		if i%2 == 1 {
			drops.AddAtOffset(d, 1)
		}
	}
	_, c := calls.TotalsAtOffset(600 * time.Millisecond)
	_, n := drops.TotalsAtOffset(600 * time.Millisecond)
	fmt.Println(c, "calls,", n, "dropped")
	// Output: 5 calls, 2 dropped
}

// stripe is a share of a caller's own state, one per group of writers,
// that counts its share of a window's current bucket on a lane of its own.
type stripe struct {
	lane rollingwindow.Lane[int64]
	// ... the caller's other per-stripe state
}

// A caller that spreads its writers over stripes already joins a lane per
// stripe to the window: an add then touches only its stripe's memory. The
// window adds the lanes up when it is read, and empties them when the
// bucket finishes.
func ExampleRollingWindow_AddLane() {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	w, err := rollingwindow.New[int64](3, time.Second, rollingwindow.WithClock(mock))
	if err != nil {
		panic(err)
	}
	stripes := make([]stripe, 4)
	for i := range stripes {
		if err := w.AddLane(&stripes[i].lane); err != nil {
			panic(err)
		}
	}

	// Writers add to their stripe's lane: 1 for a success, 0 for a failure.
	for i := range 10 {
		stripes[i%len(stripes)].lane.Add(int64(i % 2))
	}
	sum, count := w.Totals() // Totals moves the window to now, then reads
	fmt.Println("successes", sum, "of", count)

	// A lane does not read the clock: the window moves when it is read or
	// given a time, and the bucket finishes with what the lanes held.
	mock.Add(time.Second)
	done, current := w.Parts()
	fmt.Printf("finished %+v, current %+v\n", done, current)
	stripes[0].lane.Add(1)
	fmt.Printf("current %+v\n", w.Current())
	// Output:
	// successes 5 of 10
	// finished {Sum:5 Count:10}, current {Sum:0 Count:0}
	// current {Sum:1 Count:1}
}

// With WithClockEvery(16), a busy bucket's adds read the clock once in 16
// past its first 32: an add after the bucket's end may count in it, up to
// 15 of them, until an add reads the clock and moves the window.
func ExampleWithClockEvery() {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	w, err := rollingwindow.New[int64](2, time.Second, rollingwindow.WithClock(mock), rollingwindow.WithClockEvery(16))
	if err != nil {
		panic(err)
	}
	for range 40 {
		w.Add(1)
	}
	mock.Add(time.Second)
	for range 20 {
		w.Add(1) // the 41st to 47th values of the bucket do not read the clock
	}
	w.Reduce(func(b rollingwindow.Bucket[int64]) { fmt.Println(b.Count) })
	// Output:
	// 47
	// 13
}
