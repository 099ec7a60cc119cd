package retry

import (
	"context"
	"fmt"
	"math"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/retrybudget"
)

// The budget's defaults: retries at most a tenth of the calls in the
// breaker's window, and at least DefaultBudgetFloor retries per window
// whatever the traffic.
const (
	DefaultBudgetRatio = 0.1
	DefaultBudgetFloor = 3
)

// Budget bounds the retries made through one breaker: in the breaker's
// window (breaker.WithWindow, 2 s by default), at most max(Floor, Ratio ×
// the calls the window holds) retries, counting the calls the breaker
// admitted (retries included) and the retries granted. The
// budget keeps no window of its own: it reads the breaker's window and
// clock, and counts the retries it grants on the breaker's buckets, so the
// budget and the drop probability judge the same calls. A budget spent
// refuses a retry with [ErrBudgetSpent]; the budget comes back as the
// window moves on.
//
// The SRE book's figure is the default: retries at most 10% of requests.
// The floor lets light traffic retry: a breaker that sees 5 calls a window
// still grants 3 retries in it. Under an outage, a failed call's retry is
// drawn by the breaker again, so the budget and the drop probability bound
// what retries add together.
//
// A Budget is a value; the zero Budget grants no retry at all (Ratio 0,
// Floor 0). Breakers that package breaker did not make (breaker.Nop, a
// Breaker of one's own) keep no window: every retry through them is
// granted.
type Budget struct {
	// Ratio is the most retries per call in the window: 0.1 allows one
	// retry for every ten calls. It must be a number from 0 to 1.
	Ratio float64
	// Floor is how many retries a window grants whatever its calls: at
	// least 0.
	Floor int
}

// DefaultBudget returns the budget a [Policy] has unless [WithBudget] says
// otherwise: [DefaultBudgetRatio] (10%) with a floor of
// [DefaultBudgetFloor] (3) retries per window.
func DefaultBudget() Budget { return Budget{Ratio: DefaultBudgetRatio, Floor: DefaultBudgetFloor} }

// validate returns what is wrong with u, or "".
func (u Budget) validate() string {
	switch {
	case math.IsNaN(u.Ratio) || u.Ratio < 0 || u.Ratio > 1:
		return fmt.Sprintf("Ratio %v must be a number from 0 to 1", u.Ratio)
	case u.Floor < 0:
		return fmt.Sprintf("Floor %d must be at least 0", u.Floor)
	}
	return ""
}

// Take asks b's budget for one retry and counts it when granted. It
// returns nil when the retry may be made, [ErrBudgetSpent] when the
// budget has none left.
func (u Budget) Take(b breaker.Breaker) error {
	granted, ok := retrybudget.Take(b, u.Ratio, u.Floor)
	if ok && !granted {
		return ErrBudgetSpent
	}
	return nil
}

// TakeFor is for integrations that guard each attempt with a breaker of
// their own (httpbreaker's Transport, grpcbreaker's client interceptors):
// when ctx says the call is a retry (an [Attempt] above 1) whose budget was
// not taken yet, it asks b's budget for it, the budget of the [Policy]
// that made the attempt or [DefaultBudget] for an attempt number set with
// [WithAttempt] alone. It returns nil for a first attempt, or when the
// budget grants the retry, and [ErrBudgetSpent] when it does not.
func TakeFor(ctx context.Context, b breaker.Breaker) error {
	a := attemptOf(ctx)
	if a.n < 2 || a.taken {
		return nil
	}
	u := DefaultBudget()
	if a.budget != nil {
		u = *a.budget
	}
	return u.Take(b)
}
