package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// A mock clock and a seeded random source make the examples reproducible;
// real code leaves both at their defaults.
func exampleClock() *clock.Mock {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return m
}

func Example() {
	mock := exampleClock()
	b := breaker.MustNew(breaker.WithName("payments"),
		breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))

	up := false // whether the dependency works
	run := func(calls int) (failed, dropped int) {
		for range calls {
			mock.Add(5 * time.Millisecond) // 200 calls a second
			err := b.Do(func() error {
				if !up {
					return errors.New("connection refused")
				}
				return nil
			})
			switch {
			case errors.Is(err, breaker.ErrServiceUnavailable):
				dropped++ // never reached the dependency
			case err != nil:
				failed++
			}
		}
		return failed, dropped
	}

	failed, dropped := run(200)
	fmt.Println("outage:", failed, "failed,", dropped, "dropped")

	up = true
	mock.Add(breaker.DefaultWindow) // the failures leave the window
	failed, dropped = run(200)
	fmt.Println("healed:", failed, "failed,", dropped, "dropped")
	// Output:
	// outage: 14 failed, 186 dropped
	// healed: 0 failed, 0 dropped
}

func ExampleBreaker_DoWithFallbackAcceptable() {
	errNotFound := errors.New("not found")
	b := breaker.MustNew(breaker.WithClock(exampleClock()), breaker.WithProba(proba.NewSeeded(1)))

	lookup := func(user string) (string, error) {
		var name string
		err := b.DoWithFallbackAcceptable(
			func() error { // the call to the dependency
				if user == "7" {
					return errNotFound
				}
				name = "user " + user
				return nil
			},
			func(err error) error { // runs instead when the breaker drops the call
				name = "guest"
				return nil
			},
			func(err error) bool { // "not found" means the dependency is healthy
				return err == nil || errors.Is(err, errNotFound)
			},
		)
		return name, err
	}

	fmt.Println(lookup("42"))
	fmt.Println(lookup("7"))
	// Output:
	// user 42 <nil>
	//  not found
}

func ExampleRegistry() {
	// One breaker per dependency, all with the same options.
	r := breaker.MustNewRegistry(breaker.WithK(2), breaker.WithClock(exampleClock()))

	err := r.Get("inventory").Do(func() error { return nil })
	fmt.Println(r.Get("inventory").Name(), err)

	r.NoBreakerFor("audit-log") // never throttled
	fmt.Println(r.Get("audit-log").Name())
	// Output:
	// inventory <nil>
	// audit-log
}

func ExampleGet() {
	// Get uses a default registry, as go-zero's GetBreaker does.
	err := breaker.Get("example-dependency").Do(func() error {
		return nil // call the dependency here
	})
	fmt.Println(err)
	// Output: <nil>
}

func ExampleBreaker_Allow() {
	b := breaker.MustNew(breaker.WithName("inventory"), breaker.WithClock(exampleClock()))
	callInventory := func() error { return errors.New("503 from inventory") }

	// Allow asks first; the caller runs the call and reports how it went.
	promise, err := b.Allow()
	if err != nil {
		fmt.Println("dropped:", errors.Is(err, breaker.ErrServiceUnavailable))
		return
	}
	if err := callInventory(); err != nil {
		promise.Reject(err.Error()) // kept, and quoted when calls are dropped
		fmt.Println("rejected:", err)
		return
	}
	promise.Accept()
	// Output: rejected: 503 from inventory
}

func ExampleWithPlainFormula() {
	// The first second of an outage after 10 s of healthy traffic, at 1,000
	// calls a second, with the defaults and with the plain formula over
	// go-zero's 10 s window.
	for _, opts := range [][]breaker.Option{
		nil,
		{breaker.WithPlainFormula(), breaker.WithWindow(10 * time.Second), breaker.WithBuckets(40)},
	} {
		mock := exampleClock()
		b := breaker.MustNew(append(opts, breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))...)
		calls := func(n int, fail bool) (reached int) {
			for i := range n {
				_ = b.Do(func() error {
					reached++
					if fail {
						return errors.New("connection refused")
					}
					return nil
				})
				if i%100 == 99 {
					mock.Add(100 * time.Millisecond)
				}
			}
			return reached
		}
		calls(10_000, false)
		fmt.Println("calls that reached the dead dependency in its first second:", calls(1000, true))
	}
	// Output:
	// calls that reached the dead dependency in its first second: 91
	// calls that reached the dead dependency in its first second: 1000
}

func ExampleWithEvidence() {
	// A dependency called twice a second goes down for 20 s after 10 s of
	// health. Its breaker's 2 s window never holds more failures than
	// protection tolerates; the defaults read back past it for 40 calls.
	for _, opts := range [][]breaker.Option{nil, {breaker.WithEvidence(0, 0)}} {
		mock := exampleClock()
		b := breaker.MustNew(append(opts, breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))...)
		calls := func(n int, fail bool) (reached int) {
			for range n {
				_ = b.Do(func() error {
					reached++
					if fail {
						return errors.New("connection refused")
					}
					return nil
				})
				mock.Add(500 * time.Millisecond)
			}
			return reached
		}
		calls(20, false)
		fmt.Println("calls of the outage that reached the dependency:", calls(40, true), "of 40")
	}
	// Output:
	// calls of the outage that reached the dependency: 15 of 40
	// calls of the outage that reached the dependency: 40 of 40
}

func ExampleBreaker_Stats() {
	mock := exampleClock()
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)))
	for i := range 100 {
		_ = b.Do(func() error {
			if i%4 == 0 {
				return errors.New("timeout")
			}
			return nil
		})
	}
	s := b.Stats()
	fmt.Println(s.Name, s.Successes, s.Failures, s.DropProbability, s.Reasons[0].Text)
	// Output: payments 75 25 0 timeout
}

func ExampleWithListener() {
	mock := exampleClock()
	events := make(chan breaker.Event, 10)
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1)),
		breaker.WithListener(func(e breaker.Event) { events <- e }))
	run := func(fail bool) {
		for range 10 { // 1 s, 100 calls per 100 ms bucket
			for range 100 {
				_ = b.Do(func() error {
					if fail {
						return errors.New("connection refused")
					}
					return nil
				})
			}
			mock.Add(100 * time.Millisecond)
		}
	}
	run(true)  // down
	run(false) // healed
	run(false)
	run(false)
	for range 2 {
		e := <-events // listeners run on a goroutine of their own
		fmt.Println(e.Breaker, "shedding:", e.Shedding)
	}
	// Output:
	// payments shedding: true
	// payments shedding: false
}

func ExampleRegistry_SetLimit() {
	r := breaker.MustNewRegistry()
	// The integrations (httpbreaker's Transport, grpcbreaker's interceptors)
	// look up a breaker per host or method: keep at most 100 of those.
	r.SetLimit(100)
	// A name the program asks for itself is its own, kept whatever comes.
	pricing := r.Get("pricing")
	fmt.Println(pricing == r.Get("pricing"))
	// Output: true
}
