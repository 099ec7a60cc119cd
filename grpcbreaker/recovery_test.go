package grpcbreaker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
	"github.com/srebreaker/srebreaker/proba"
)

// The scenario and its measures are those of httpbreaker's
// TestTransportAndHandler_recoverTogether.

// recoveryScenario is the scenario of the client and server recovery
// test: requests issued one per tick, synchronously, on a virtual clock
// that both breakers read; healthy, then down for outage, then healed.
type recoveryScenario struct {
	tick                    time.Duration // the virtual clock moves by a tick at a time
	perTick                 int           // requests per tick, one after the other
	healthy, outage, healed time.Duration
}

// defaultRecovery is 200 requests/s: 2 every 10 ms.
var defaultRecovery = recoveryScenario{tick: 10 * time.Millisecond, perTick: 2, healthy: 2 * time.Second,
	outage: 20 * time.Second, healed: 3 * time.Second}

// recovery is what a run measured after healing: when the first call
// succeeded, and from when on every 100 ms slot had at least 95 % of its
// calls succeed, to the end of the run; reached is the share of the
// outage's calls that reached the dependency.
type recovery struct {
	firstSuccess, sustained time.Duration
	reached                 float64
}

func (r recovery) String() string {
	return fmt.Sprintf("first success %v, 95%% succeeding from %v, %.1f%% of the outage reached the dependency",
		r.firstSuccess, r.sustained, 100*r.reached)
}

// run drives s on m: call makes one request and reports whether it
// succeeded; down tells the dependency whether it is down.
func (s recoveryScenario) run(m *clock.Mock, setDown func(bool), reachedDep func() int64, call func() bool) recovery {
	const slot = 100 * time.Millisecond
	start := m.Now()
	healAt := s.healthy + s.outage
	end := healAt + s.healed
	perSlot := int(slot/s.tick) * s.perTick
	var slots [][2]int // per slot after healing: successes, calls
	r := recovery{firstSuccess: -1}
	var outageCalls, reachedAtOutage int64
	for t := time.Duration(0); t < end; t += s.tick {
		m.Set(start.Add(t))
		switch t {
		case s.healthy:
			setDown(true)
			reachedAtOutage = reachedDep()
		case healAt:
			setDown(false)
			r.reached = float64(reachedDep()-reachedAtOutage) / float64(outageCalls)
		}
		for range s.perTick {
			ok := call()
			if t >= s.healthy && t < healAt {
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
				if r.firstSuccess < 0 {
					r.firstSuccess = t - healAt
				}
			}
		}
	}
	r.sustained = -1
	for i := len(slots) - 1; i >= 0; i-- {
		if slots[i][1] == perSlot && 20*slots[i][0] < 19*slots[i][1] {
			break
		}
		r.sustained = time.Duration(i) * slot
	}
	if r.sustained >= 0 {
		r.sustained += slot
	}
	return r
}

// recoverRuns runs seeds 1 to n at once, each on its own virtual clock:
// most of a run's time is the mock clock's pauses.
func recoverRuns(n int, run func(seed uint64) recovery) []recovery {
	rs := make([]recovery, n)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i] = run(uint64(i + 1))
		}()
	}
	wg.Wait()
	return rs
}

// TestClientAndServerInterceptors_recoverTogether measures how a client
// breaker (the unary client interceptor) and a server breaker (the unary
// server interceptor) readmit a dependency, the server's handler, that
// healed after a 20 s outage at 200 calls/s, on a real server on
// 127.0.0.1, both breakers reading one virtual clock: 10 runs, seeds 1 to
// 10, run at once. The goal: the first success within 0.2 s of healing,
// and 95 % of calls succeeding within 1 s, in every run.
func TestClientAndServerInterceptors_recoverTogether(t *testing.T) {
	rs := recoverRuns(10, func(seed uint64) recovery { return runGRPCRecovery(t, defaultRecovery, seed) })
	for i, r := range rs {
		t.Logf("seed %d: %v", i+1, r)
	}
	for i, r := range rs {
		assert.True(t, r.firstSuccess >= 0 && r.firstSuccess <= 200*time.Millisecond,
			"seed %d: first success %v after healing", i+1, r.firstSuccess)
		assert.True(t, r.sustained >= 0 && r.sustained <= time.Second,
			"seed %d: 95 %% succeeding from %v after healing", i+1, r.sustained)
	}
}

func runGRPCRecovery(t *testing.T, s recoveryScenario, seed uint64) recovery {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	server := breaker.NewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(2*seed)))
	client := breaker.NewRegistry(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(2*seed+1)))

	done := make(chan struct{}, 1)
	signal := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		defer func() { done <- struct{}{} }() // the server has recorded the call
		return h(ctx, req)
	}
	es, addr := startServer(t, grpc.ChainUnaryInterceptor(signal,
		grpcbreaker.UnaryServerInterceptor(grpcbreaker.WithRegistry(server))))
	cc := dial(t, addr, grpc.WithUnaryInterceptor(grpcbreaker.UnaryClientInterceptor(grpcbreaker.WithRegistry(client))))

	value := "ok"
	c := func() bool {
		_, err := call(context.Background(), cc, value)
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			return false // never sent
		}
		<-done
		return err == nil
	}
	setDown := func(down bool) {
		value = "ok"
		if down {
			value = "code:13" // Internal
		}
	}
	return s.run(m, setDown, es.received.Load, c)
}
