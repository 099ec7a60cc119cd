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
	b := breaker.MustNew(breaker.WithName("hang"))
	return func() (func(error), bool) {
		p, err := b.Allow()
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

// newFailsafeAdaptive: failsafe-go's throttler at its defaults, over a
// window of 1 minute, rejecting at most 90 % of the calls.
func newFailsafeAdaptive() allowFunc {
	t := adaptivethrottler.NewWithDefaults[any]()
	return func() (func(error), bool) {
		if !t.TryAcquirePermit() {
			return nil, false
		}
		return func(err error) {
			if err == nil {
				t.RecordSuccess()
			} else {
				t.RecordFailure()
			}
		}, true
	}
}

// newFailsafeClassic: failsafe-go's circuit breaker at its defaults, which
// opens on the first failure, for a delay of 1 minute.
func newFailsafeClassic() allowFunc {
	cb := circuitbreaker.NewWithDefaults[any]()
	return func() (func(error), bool) {
		if !cb.TryAcquirePermit() {
			return nil, false
		}
		return func(err error) {
			if err == nil {
				cb.RecordSuccess()
			} else {
				cb.RecordFailure()
			}
		}, true
	}
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
	b := gozero.NewBreaker()
	return func() (func(error), bool) {
		p, err := b.Allow()
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
