package main

import (
	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/go-kratos/aegis/circuitbreaker/sre"
	"github.com/sony/gobreaker/v2"
	gozero "github.com/zeromicro/go-zero/core/breaker"

	"github.com/srebreaker/srebreaker/breaker"
)

// allowFunc asks one breaker to make a call. When the breaker admits it,
// allowFunc returns true and the function on which the call's outcome is
// reported, once: nil for a success, the call's error for a failure.
type allowFunc func() (done func(err error), ok bool)

// library builds a breaker of one library at its defaults, as the peer
// benchmarks build it (bench/libs_test.go), behind an allowFunc.
type library struct {
	name string // as in the peer benchmarks' lib= key
	new  func() allowFunc
}

// libraries are the breakers the command knows, srebreaker first.
var libraries = []library{
	{"srebreaker", newOurs},
	{"failsafe-adaptive", newFailsafeAdaptive},
	{"failsafe-classic", newFailsafeClassic},
	{"gobreaker", newGobreaker},
	{"go-zero", newGoZero},
	{"aegis", newAegis},
}

func libraryNames() []string {
	names := make([]string, len(libraries))
	for i, l := range libraries {
		names[i] = l.name
	}
	return names
}

// libraryNamed returns the library of that name, or nil.
func libraryNamed(name string) *library {
	for i := range libraries {
		if libraries[i].name == name {
			return &libraries[i]
		}
	}
	return nil
}

// newOurs: srebreaker's defaults, which count the calls still out against
// the dependency once they are overdue against the latency it has learned.
func newOurs() allowFunc {
	return promisesAllow(breaker.MustNew(breaker.WithName("hang")).Allow)
}

// promise is the two-step API srebreaker and go-zero share: a call asked
// for returns a promise, on which its outcome is reported.
type promise interface {
	Accept()
	Reject(reason string)
}

// promisesAllow asks allow for a promise, and reports the outcome on it.
func promisesAllow[P promise](allow func() (P, error)) allowFunc {
	return func() (func(error), bool) {
		p, err := allow()
		if err != nil {
			return nil, false
		}
		return func(err error) {
			if err == nil {
				p.Accept()
			} else {
				p.Reject(err.Error())
			}
		}, true
	}
}

// permits is failsafe-go's two-step API, which its throttler and its
// circuit breaker share.
type permits interface {
	TryAcquirePermit() bool
	RecordSuccess()
	RecordFailure()
}

// permitsAllow asks p for a permit, and reports the outcome to it.
func permitsAllow(p permits) allowFunc {
	return func() (func(error), bool) {
		if !p.TryAcquirePermit() {
			return nil, false
		}
		return func(err error) {
			if err == nil {
				p.RecordSuccess()
			} else {
				p.RecordFailure()
			}
		}, true
	}
}

// newFailsafeAdaptive: failsafe-go's throttler at its defaults, over a
// window of 1 minute, rejecting at most 90 % of the calls.
func newFailsafeAdaptive() allowFunc {
	return permitsAllow(adaptivethrottler.NewWithDefaults[any]())
}

// newFailsafeClassic: failsafe-go's circuit breaker at its defaults, which
// opens on the first failure, for a delay of 1 minute.
func newFailsafeClassic() allowFunc {
	return permitsAllow(circuitbreaker.NewWithDefaults[any]())
}

// newGobreaker: gobreaker's two-step breaker at its defaults, which opens
// after more than 5 failures in a row, for 60 s.
func newGobreaker() allowFunc {
	cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{})
	return func() (func(error), bool) {
		done, err := cb.Allow()
		if err != nil {
			return nil, false
		}
		return done, true
	}
}

// newGoZero: go-zero's breaker, over a window of 10 s, with K = 1.5 and a
// protection of 5 calls.
func newGoZero() allowFunc {
	return promisesAllow(gozero.NewBreaker().Allow)
}

// newAegis: aegis's sre breaker, over a window of 3 s, with K = 1/0.6,
// shedding nothing before 100 calls in the window.
func newAegis() allowFunc {
	b := sre.NewBreaker()
	return func() (func(error), bool) {
		if b.Allow() != nil {
			return nil, false
		}
		return func(err error) {
			if err == nil {
				b.MarkSuccess()
			} else {
				b.MarkFailed()
			}
		}, true
	}
}
