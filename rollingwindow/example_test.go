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
