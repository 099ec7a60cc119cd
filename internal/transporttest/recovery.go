package transporttest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// Scenario is the scenario of the client and server recovery tests: calls
// issued one per tick, synchronously, on a virtual clock that both
// breakers read; healthy, then down for Outage, then healed.
type Scenario struct {
	Tick                    time.Duration // the virtual clock moves by a tick at a time
	PerTick                 int           // calls per tick, one after the other
	Healthy, Outage, Healed time.Duration
}

// DefaultScenario is 200 calls/s, 2 every 10 ms: healthy for 2 s, down
// for 20 s, healed for 3 s.
var DefaultScenario = Scenario{Tick: 10 * time.Millisecond, PerTick: 2, Healthy: 2 * time.Second,
	Outage: 20 * time.Second, Healed: 3 * time.Second}

// The recovery goal, in every run: the first success within
// GoalFirstSuccess of healing, 95 % of calls succeeding within
// GoalSustained.
const (
	GoalFirstSuccess = 150 * time.Millisecond
	GoalSustained    = time.Second
)

// Recovery is what a run measured after healing: when the first call
// succeeded, and from when on every 100 ms slot had at least 95 % of its
// calls succeed, to the end of the run (-1 for never); Reached is the
// share of the outage's calls that reached the dependency.
type Recovery struct {
	FirstSuccess, Sustained time.Duration
	Reached                 float64
}

func (r Recovery) String() string {
	return fmt.Sprintf("first success %v, 95%% succeeding from %v, %.1f%% of the outage reached the dependency",
		r.FirstSuccess, r.Sustained, 100*r.Reached)
}

// Wire is a transport's side of a recovery run.
type Wire struct {
	// SetDown tells the dependency whether it is down.
	SetDown func(down bool)
	// Reached returns how many calls have reached the dependency.
	Reached func() int64
	// Call makes one call, once the server has recorded it, and reports
	// whether it succeeded.
	Call func() bool
}

// Run drives s on m through w.
func (s Scenario) Run(m *clock.Mock, w Wire) Recovery {
	const slot = 100 * time.Millisecond
	start := m.Now()
	healAt := s.Healthy + s.Outage
	end := healAt + s.Healed
	perSlot := int(slot/s.Tick) * s.PerTick
	var slots [][2]int // per slot after healing: successes, calls
	r := Recovery{FirstSuccess: -1}
	var outageCalls, reachedAtOutage int64
	for t := time.Duration(0); t < end; t += s.Tick {
		m.Set(start.Add(t))
		switch t {
		case s.Healthy:
			w.SetDown(true)
			reachedAtOutage = w.Reached()
		case healAt:
			w.SetDown(false)
			r.Reached = float64(w.Reached()-reachedAtOutage) / float64(outageCalls)
		}
		for range s.PerTick {
			ok := w.Call()
			if t >= s.Healthy && t < healAt {
				outageCalls++
			}
			if t < healAt {
				continue
			}
			i := int((t - healAt) / slot)
			if i == len(slots) {
				slots = append(slots, [2]int{})
			}
			slots[i][1]++
			if ok {
				slots[i][0]++
				if r.FirstSuccess < 0 {
					r.FirstSuccess = t - healAt
				}
			}
		}
	}
	r.Sustained = -1
	for i := len(slots) - 1; i >= 0; i-- {
		if slots[i][1] == perSlot && 20*slots[i][0] < 19*slots[i][1] {
			break
		}
		r.Sustained = time.Duration(i) * slot
	}
	if r.Sustained >= 0 {
		r.Sustained += slot
	}
	return r
}

// Runs is how many runs RecoverTogether makes, seeds 1 to Runs.
const Runs = 10

// RecoverTogether measures how a client breaker and a server breaker
// readmit a dependency that healed after DefaultScenario's outage: Runs
// runs, seeds 1 to Runs, run at once, each on its own virtual clock (most
// of a run's time is the mock clock's pauses), both breakers of a run
// reading it, the server's randomness seeded with 2·seed and the client's
// with 2·seed+1. wire sets up a run's transport over the server's and the
// client's registry, on the test's goroutine. It logs each run's figures, asserts the goal in every
// run, and returns the figures.
func RecoverTogether(t *testing.T, wire func(server, client *breaker.Registry) Wire) []Recovery {
	t.Helper()
	rs := make([]Recovery, Runs)
	var wg sync.WaitGroup
	for i := range rs {
		seed := uint64(i + 1)
		m := clock.NewMock()
		m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
		server := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(2*seed)))
		client := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(2*seed+1)))
		w := wire(server, client) // on the test's goroutine, where it may fail the test
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i] = DefaultScenario.Run(m, w)
		}()
	}
	wg.Wait()
	for i, r := range rs {
		t.Logf("seed %d: %v", i+1, r)
	}
	for i, r := range rs {
		assert.True(t, r.FirstSuccess >= 0 && r.FirstSuccess <= GoalFirstSuccess,
			"seed %d: first success %v after healing", i+1, r.FirstSuccess)
		assert.True(t, r.Sustained >= 0 && r.Sustained <= GoalSustained,
			"seed %d: 95 %% succeeding from %v after healing", i+1, r.Sustained)
	}
	return rs
}
