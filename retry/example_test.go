package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/retry"
)

// exampleClock is a mock clock on which a backoff passes at once.
type exampleClock struct{ *clock.Mock }

func (c exampleClock) After(d time.Duration) <-chan time.Time {
	c.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

func Example() {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(m))
	policy := retry.MustNew(retry.WithClock(exampleClock{m}), retry.WithRand(rand.NewPCG(1, 2)))

	err := policy.Do(context.Background(), b, func(ctx context.Context) error {
		n := retry.Attempt(ctx)
		fmt.Println("attempt", n)
		if n < 3 {
			return errors.New("connection reset")
		}
		return nil
	})
	fmt.Println("err:", err)
	s := b.Stats()
	fmt.Printf("%d retries of the budget, %d calls in the window\n", s.Retries, s.Successes+s.Failures)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// err: <nil>
	// 2 retries of the budget, 3 calls in the window
}

func ExampleCall() {
	policy := retry.MustNew(retry.WithBackoff(time.Millisecond, time.Millisecond))
	v, err := retry.Call(context.Background(), policy, breaker.Nop(), func(ctx context.Context) (string, error) {
		if retry.Attempt(ctx) == 1 {
			return "", errors.New("timeout")
		}
		return "paid", nil
	})
	fmt.Println(v, err)
	// Output: paid <nil>
}

// serverSaid is an error by which a server answers "overloaded; don't
// retry".
type serverSaid struct{}

func (serverSaid) Error() string                        { return "overloaded" }
func (serverSaid) RetryPushback() (time.Duration, bool) { return 0, false }

func ExamplePushback() {
	policy := retry.MustNew()
	attempts := 0
	err := policy.Do(context.Background(), nil, func(context.Context) error {
		attempts++
		return serverSaid{}
	})
	fmt.Println(err, "after", attempts, "attempt")
	// Output: overloaded after 1 attempt
}

func ExampleBudget() {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := breaker.MustNew(breaker.WithClock(m))
	for range 50 { // 50 calls in the window
		p, _ := b.Allow()
		p.Accept()
	}
	budget := retry.DefaultBudget() // 10%, at least 3 per window
	granted := 0
	for budget.Take(b) == nil {
		granted++
	}
	fmt.Println(granted, "retries granted")
	// Output: 5 retries granted
}
