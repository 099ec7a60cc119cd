package bench

import (
	"errors"

	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/go-kratos/aegis/circuitbreaker/sre"
	"github.com/sony/gobreaker/v2"
	gozero "github.com/zeromicro/go-zero/core/breaker"

	"github.com/srebreaker/srebreaker/breaker"
)

// The value of the lib= key in every benchmark name, so that benchstat can
// put each library in a column of its own (-col /lib).
const (
	libOurs             = "srebreaker"
	libFailsafeAdaptive = "failsafe-adaptive"
	libFailsafeClassic  = "failsafe-classic"
	libGobreaker        = "gobreaker"
	libGoZero           = "go-zero"
	libAegis            = "aegis"
)

// shedCalls is how many calls the shedding constructors of the adaptive
// breakers make, reporting a failure for each one admitted. None of them
// records its own drops except go-zero, so the failures in the window grow
// like the square root of the calls made, and the share still admitted falls
// the same way: about 0.5 % for ours after 200,000 calls, 0.2 % for aegis
// and failsafe-go's throttler. go-zero counts its drops as calls and gets
// to nearly 1 at once.
const shedCalls = 200_000

// errDown is the error every failing call returns.
var errDown = errors.New("down")

// Constructors, one pair per library: a breaker at its defaults that admits
// every call, and the same breaker driven into shedding through its own
// two-step API (ask, then report a failure when admitted).

func oursHealthy() breaker.Breaker { return breaker.MustNew() }

func oursShedding() breaker.Breaker {
	b := breaker.MustNew()
	for range shedCalls {
		if p, err := b.Allow(); err == nil {
			p.Reject(errDown.Error())
		}
	}
	return b
}

func goZeroHealthy() gozero.Breaker { return gozero.NewBreaker() }

// goZeroShedding: go-zero records a dropped call as a drop in its window,
// and lets one call through per second once it sheds (its force-pass); the
// drop ratio is (total − 5 − K·accepts)/(total + 1), close to 1 here.
func goZeroShedding() gozero.Breaker {
	b := gozero.NewBreaker()
	for range shedCalls {
		if p, err := b.Allow(); err == nil {
			p.Reject(errDown.Error())
		}
	}
	return b
}

func aegisHealthy() *sre.Breaker { return sre.NewBreaker().(*sre.Breaker) }

// aegisShedding: aegis starts shedding after 100 calls in its 3 s window,
// with drop ratio (total − K·accepts)/(total + 1).
func aegisShedding() *sre.Breaker {
	b := aegisHealthy()
	for range shedCalls {
		if b.Allow() == nil {
			b.MarkFailed()
		}
	}
	return b
}

func gobreakerHealthy() *gobreaker.TwoStepCircuitBreaker[struct{}] {
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{})
}

// gobreakerOpen: the default ReadyToTrip opens the breaker after more than 5
// consecutive failures, for the default Timeout of 60 s.
func gobreakerOpen() *gobreaker.TwoStepCircuitBreaker[struct{}] {
	b := gobreakerHealthy()
	for range 6 {
		if done, err := b.Allow(); err == nil {
			done(errDown)
		}
	}
	return b
}

func failsafeClassicHealthy() circuitbreaker.CircuitBreaker[any] {
	return circuitbreaker.NewWithDefaults[any]()
}

// failsafeClassicOpen: the default breaker opens on the first failure, for
// a delay of 1 minute.
func failsafeClassicOpen() circuitbreaker.CircuitBreaker[any] {
	b := failsafeClassicHealthy()
	if b.TryAcquirePermit() {
		b.RecordFailure()
	}
	return b
}

func failsafeAdaptiveHealthy() adaptivethrottler.AdaptiveThrottler[any] {
	return adaptivethrottler.NewWithDefaults[any]()
}

// failsafeAdaptiveShedding: the default throttler never rejects more than
// 90 % of calls (WithMaxRejectionRate), so a tenth of the calls in a
// Drop benchmark would be admitted ones. This one lifts the cap to 1, the
// only option changed from the defaults, so that it sheds like the others;
// its rejection rate is then (executions − successes/0.9)/(executions + 1).
func failsafeAdaptiveShedding() adaptivethrottler.AdaptiveThrottler[any] {
	t := adaptivethrottler.NewBuilder[any]().WithMaxRejectionRate(1).Build()
	for range shedCalls {
		if t.TryAcquirePermit() {
			t.RecordFailure()
		}
	}
	return t
}
