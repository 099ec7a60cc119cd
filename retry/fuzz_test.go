package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/retry"
)

// FuzzCall_serverAnswers runs a call through a Policy against a server
// whose answers the fuzzer picks: a success, a plain failure, or a 503
// whose Retry-After and retry advice it writes, read by httpbreaker as a
// client reads them. It checks what the Policy does with what the server
// said: the attempts are numbered 1, 2, … and at most WithAttempts; each
// wait is the server's Retry-After when it gave one (at most
// httpbreaker.MaxRetryAfter), the backoff otherwise, never negative; a
// "don't retry" is not retried; the error returned is the last attempt's;
// and a second run with the same seed waits the same. Its seed corpus is
// in testdata/fuzz; go test runs it, make fuzz explores from it.
func FuzzCall_serverAnswers(f *testing.F) {
	f.Fuzz(func(t *testing.T, attempts uint8, baseMS, maxMS uint16, answers []byte, retryAfter, advice string) {
		attempts = 1 + attempts%10
		base := time.Duration(1+baseMS%1000) * time.Millisecond
		ceiling := max(base, time.Duration(maxMS)*time.Millisecond)
		run := func() (numbers []int, waits []time.Duration, errs []error, err error) {
			clk := &stepClock{now: start}
			p := retry.MustNew(retry.WithAttempts(int(attempts)), retry.WithBackoff(base, ceiling),
				retry.WithClock(clk), retry.WithRand(rand.NewPCG(1, 2)), retry.WithoutBudget())
			err = p.Do(context.Background(), nil, func(ctx context.Context) error {
				n := retry.Attempt(ctx)
				numbers = append(numbers, n)
				kind := byte(1) // past the fuzzer's answers, a plain failure
				if n <= len(answers) {
					kind = answers[n-1] % 3
				}
				var e error
				switch kind {
				case 1:
					e = errors.New("failed")
				case 2:
					resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}}
					resp.Header.Set("Retry-After", retryAfter)
					resp.Header.Set(httpbreaker.RetryHeader, advice)
					e = httpbreaker.ResponseError(resp)
				}
				errs = append(errs, e)
				return e
			})
			return numbers, clk.waited(), errs, err
		}
		numbers, waits, errs, err := run()

		require.True(t, len(numbers) >= 1 && len(numbers) <= int(attempts), "%d attempts of %d", len(numbers), attempts)
		for i, n := range numbers {
			require.Equal(t, i+1, n, "the attempts' numbers")
		}
		last := errs[len(errs)-1]
		require.Equal(t, last, err, "the last attempt's error, untouched")
		for i, e := range errs[:len(errs)-1] {
			require.Error(t, e, "attempt %d succeeded and was retried", i+1)
			require.True(t, retry.Retryable(e), "attempt %d said don't retry, and was retried", i+1)
		}
		if last != nil && retry.Retryable(last) {
			require.Len(t, numbers, int(attempts), "a retryable failure with attempts left")
		}

		require.Len(t, waits, len(numbers)-1, "a wait between attempts")
		for i, w := range waits {
			d, _, ok := retry.PushbackOf(errs[i])
			switch {
			case ok && d > 0:
				require.Equal(t, d, w, "retry %d waits what the server asked", i+1)
				require.LessOrEqual(t, w, 5*time.Minute, "httpbreaker caps Retry-After at 5 minutes")
			default:
				require.True(t, w >= 0 && w < min(ceiling, base<<i), "retry %d waited %v, past its backoff", i+1, w)
			}
		}

		againNumbers, againWaits, _, againErr := run()
		require.Equal(t, numbers, againNumbers, "a second run")
		require.Equal(t, waits, againWaits, "a second run")
		require.Equal(t, err == nil, againErr == nil, "a second run")
	})
}

// stepClock is a clock on which a wait passes at once, like jumpClock, but
// without the mock's pause on each move, which would slow the fuzzer a
// thousandfold. Not safe for concurrent use.
type stepClock struct {
	clock.Clock // nil: a Policy reads Now and After alone
	now         time.Time
	waits       []time.Duration
}

func (c *stepClock) Now() time.Time { return c.now }

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func (c *stepClock) waited() []time.Duration { return c.waits }
