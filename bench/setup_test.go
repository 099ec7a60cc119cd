package bench

import (
	"errors"
	"testing"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"
	gozero "github.com/zeromicro/go-zero/core/breaker"

	"github.com/srebreaker/srebreaker/breaker"
)

// The benchmarks mean something only if their breakers are in the state
// they claim: these tests check that each healthy breaker admits every call
// and that each shedding or open one drops nearly all.

// calls is how many calls each state check makes.
const calls = 10_000

// maxAdmittedShare is the largest share of calls a shedding breaker may
// still admit for its Drop benchmark to count as measuring drops.
const maxAdmittedShare = 0.01

// step makes one call through a library's two-step API, reporting a success
// (healthy) or a failure (shedding) when admitted, and says whether it was
// admitted.
type step func() bool

func steps() map[string]struct{ healthy, shedding func() step } {
	return map[string]struct{ healthy, shedding func() step }{
		libOurs: {
			healthy: func() step {
				b := oursHealthy()
				return func() bool {
					p, err := b.Allow()
					if err != nil {
						return false
					}
					p.Accept()
					return true
				}
			},
			shedding: func() step {
				b := oursShedding()
				return func() bool {
					p, err := b.Allow()
					if err != nil {
						return false
					}
					p.Reject(errDown.Error())
					return true
				}
			},
		},
		libFailsafeAdaptive: {
			healthy: func() step {
				t := failsafeAdaptiveHealthy()
				return func() bool {
					if !t.TryAcquirePermit() {
						return false
					}
					t.RecordSuccess()
					return true
				}
			},
			shedding: func() step {
				t := failsafeAdaptiveShedding()
				return func() bool {
					if !t.TryAcquirePermit() {
						return false
					}
					t.RecordFailure()
					return true
				}
			},
		},
		libFailsafeClassic: {
			healthy: func() step {
				cb := failsafeClassicHealthy()
				return func() bool {
					if !cb.TryAcquirePermit() {
						return false
					}
					cb.RecordSuccess()
					return true
				}
			},
			shedding: func() step {
				cb := failsafeClassicOpen()
				return func() bool {
					if !cb.TryAcquirePermit() {
						return false
					}
					cb.RecordFailure()
					return true
				}
			},
		},
		libGobreaker: {
			healthy: func() step {
				cb := gobreakerHealthy()
				return func() bool {
					done, err := cb.Allow()
					if err != nil {
						return false
					}
					done(nil)
					return true
				}
			},
			shedding: func() step {
				cb := gobreakerOpen()
				return func() bool {
					done, err := cb.Allow()
					if err != nil {
						return false
					}
					done(errDown)
					return true
				}
			},
		},
		libGoZero: {
			healthy: func() step {
				b := goZeroHealthy()
				return func() bool {
					p, err := b.Allow()
					if err != nil {
						return false
					}
					p.Accept()
					return true
				}
			},
			shedding: func() step {
				b := goZeroShedding()
				return func() bool {
					p, err := b.Allow()
					if err != nil {
						return false
					}
					p.Reject(errDown.Error())
					return true
				}
			},
		},
		libAegis: {
			healthy: func() step {
				cb := aegisHealthy()
				return func() bool {
					if cb.Allow() != nil {
						return false
					}
					cb.MarkSuccess()
					return true
				}
			},
			shedding: func() step {
				cb := aegisShedding()
				return func() bool {
					if cb.Allow() != nil {
						return false
					}
					cb.MarkFailed()
					return true
				}
			},
		},
	}
}

func admitted(s step) int {
	n := 0
	for range calls {
		if s() {
			n++
		}
	}
	return n
}

func TestHealthy_admitsEveryCall(t *testing.T) {
	for name, s := range steps() {
		t.Run(name, func(t *testing.T) {
			if got := admitted(s.healthy()); got != calls {
				t.Errorf("admitted %d of %d calls, want all", got, calls)
			}
		})
	}
}

func TestShedding_dropsNearlyEveryCall(t *testing.T) {
	for name, s := range steps() {
		t.Run(name, func(t *testing.T) {
			got := admitted(s.shedding())
			if share := float64(got) / calls; share > maxAdmittedShare {
				t.Errorf("admitted %d of %d calls (%.2f %%), want at most %.0f %%",
					got, calls, 100*share, 100*maxAdmittedShare)
			}
			t.Logf("admitted %d of %d calls", got, calls)
		})
	}
}

func TestOurs_dropErrorQuotesReason(t *testing.T) {
	checkOursDropError(t, oursShedding())
}

func TestDo_nilErrorAdmitted(t *testing.T) {
	tests := map[string]func() error{
		libOurs:             func() error { return oursHealthy().Do(ok) },
		libGoZero:           func() error { return goZeroHealthy().Do(ok) },
		libFailsafeAdaptive: func() error { return failsafe.With[any](failsafeAdaptiveHealthy()).Run(ok) },
		libFailsafeClassic:  func() error { return failsafe.With[any](failsafeClassicHealthy()).Run(ok) },
		libGobreaker: func() error {
			cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
			_, err := cb.Execute(func() (struct{}, error) { return struct{}{}, nil })
			return err
		},
	}
	for name, do := range tests {
		t.Run(name, func(t *testing.T) {
			if err := do(); err != nil {
				t.Errorf("Do(nil-error func) = %v, want nil", err)
			}
		})
	}
}

func TestOpen_classicBreakersAreOpen(t *testing.T) {
	if st := gobreakerOpen().State(); st != gobreaker.StateOpen {
		t.Errorf("gobreaker state %v, want open", st)
	}
	if st := failsafeClassicOpen().State(); st != circuitbreaker.OpenState {
		t.Errorf("failsafe-go circuit breaker state %v, want open", st)
	}
	if _, err := gobreakerOpen().Allow(); !errors.Is(err, gobreaker.ErrOpenState) {
		t.Errorf("gobreaker Allow when open = %v, want ErrOpenState", err)
	}
}

func TestRegistry_returnsTheSameBreaker(t *testing.T) {
	r := breaker.MustNewRegistry()
	if r.Get(registryName) != r.Get(registryName) {
		t.Error("breaker.Registry.Get returned two breakers for one name")
	}
	if gozero.GetBreaker(registryName) != gozero.GetBreaker(registryName) {
		t.Error("go-zero GetBreaker returned two breakers for one name")
	}
}
