package redisbreaker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// fleetRun is what a fleet of processes let through, per phase.
type fleetRun struct {
	healthyDropped          int
	othersDropped           int // during the outage, by processes not cut off
	othersOffered           int
	cutOffered, cutDropped  int // the cut-off processes' calls from 2 s into the outage on
	outageOffered, outageIn int
	readmittedAfter         time.Duration // first 100 ms of the healed phase with 95 % admitted; -1 if none
}

// runFleet runs issue 12's fleet scenario against a real redis-server, in
// virtual time: processes, each with a breaker of one dependency calling it
// rate times a second, the calls of the fleet evenly spaced, every process
// syncing with Redis every period (its own share of the period apart);
// healthy for 10 s (1 % of calls fail), down for 20 s, healed for 20 s. With
// share false, no process syncs: each decides on its own counts. With
// cutoff above 0, the outage fails the calls of processes 0 to cutoff−1
// only.
func runFleet(t *testing.T, srv *redisServer, processes, rate int, share bool, cutoff int) fleetRun {
	partition := cutoff > 0
	clk := newVirtualClock()
	rdb := srv.client()
	breakers := make([]breaker.Breaker, processes)
	sharers := make([]*redisbreaker.Sharer, processes)
	prefix := fmt.Sprintf("fleet-%v-%v:", share, cutoff)
	for i := range breakers {
		breakers[i] = breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(clk),
			breaker.WithProba(proba.NewSeeded(uint64(i+1))))
		s, err := redisbreaker.New(rdb, redisbreaker.WithClock(clk), redisbreaker.WithPrefix(prefix))
		require.NoError(t, err)
		require.NoError(t, s.Share(breakers[i]))
		t.Cleanup(func() { _ = s.Close() })
		sharers[i] = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const healthy, outage, healed = 10 * time.Second, 20 * time.Second, 20 * time.Second
	step := time.Second / time.Duration(processes*rate) // between two calls of the fleet
	syncEvery := redisbreaker.DefaultPeriod / time.Duration(processes)
	dependency := rand.New(rand.NewPCG(1, 2))
	run := fleetRun{readmittedAfter: -1}
	var slotOffered, slotAdmitted int
	var elapsed, nextSync time.Duration
	syncing := 0
	for call := 0; elapsed < healthy+outage+healed; call++ {
		elapsed = time.Duration(call) * step
		for share && nextSync <= elapsed {
			clk.advance(nextSync - (clk.Now().Sub(start)))
			_ = sharers[syncing].Sync(ctx) // a failure leaves the breaker on its own counts
			syncing = (syncing + 1) % processes
			nextSync += syncEvery
		}
		clk.advance(elapsed - clk.Now().Sub(start))
		b := breakers[call%processes]
		p, err := b.Allow()
		switch {
		case partition && elapsed >= healthy && elapsed < healthy+outage && call%processes >= cutoff:
			run.othersOffered++
			if err != nil {
				run.othersDropped++
			} else {
				p.Accept()
			}
		case elapsed < healthy:
			if err != nil {
				run.healthyDropped++
			} else if dependency.Float64() < 0.01 {
				p.Reject("boom")
			} else {
				p.Accept()
			}
		case elapsed < healthy+outage:
			if elapsed >= healthy+2*time.Second {
				run.cutOffered++
				if err != nil {
					run.cutDropped++
				}
			}
			run.outageOffered++
			if err == nil {
				run.outageIn++
				p.Reject("connection refused")
			}
		default:
			slotOffered++
			if err == nil {
				slotAdmitted++
				p.Accept()
			}
			since := elapsed - healthy - outage
			if next := since + step; next/(100*time.Millisecond) != since/(100*time.Millisecond) {
				if run.readmittedAfter < 0 && slotAdmitted*100 >= 95*slotOffered {
					run.readmittedAfter = (since/(100*time.Millisecond) + 1) * 100 * time.Millisecond
				}
				slotOffered, slotAdmitted = 0, 0
			}
		}
	}
	return run
}

// The fleet goals of issue 12, against a real redis-server: 50 processes
// at 2 requests/s, an outage seen by all.
func TestSharer_fleetSheds_outageSeenByAll(t *testing.T) {
	srv := startRedis(t)
	shared := runFleet(t, srv, 50, 2, true, 0)
	t.Logf("shared: %+v", shared)
	assert.Zero(t, shared.healthyDropped, "false drops while healthy")
	assert.LessOrEqual(t, 100*float64(shared.outageIn)/float64(shared.outageOffered), 10.0,
		"share of the outage that reached the dependency")
	assert.GreaterOrEqual(t, shared.readmittedAfter, time.Duration(0), "95 %% admitted after healing")
	assert.LessOrEqual(t, shared.readmittedAfter, 2*time.Second, "95 %% admitted after healing")

	alone := runFleet(t, srv, 50, 2, false, 0)
	t.Logf("alone: %+v", alone)
	assert.Greater(t, alone.outageIn, 3*shared.outageIn, "each process alone sees too few calls to shed as much")
}

// A partition seen by one process: the fleet's successes keep every other
// process from dropping anything, and process 0 decides on its own
// evidence (at 20 requests/s, enough to shed nearly all of its outage).
func TestSharer_fleetSheds_partitionSeenByOne(t *testing.T) {
	srv := startRedis(t)
	run := runFleet(t, srv, 10, 20, true, 1)
	t.Logf("%+v", run)
	assert.Zero(t, run.othersDropped, "the other processes drop nothing")
	assert.Zero(t, run.healthyDropped)
	assert.Less(t, 100*float64(run.outageIn)/float64(run.outageOffered), 20.0,
		"process 0 sheds most of its outage on its own evidence")
}

// Issue 28's poison: 50 processes at 20 requests/s, 20 of them cut off from
// the dependency (every call of theirs fails), 30 healthy. The healthy
// ones drop at most 1 % of their calls; from 2 s into the cut on, the
// cut-off ones drop at least 90 % of theirs.
func TestSharer_fleetSheds_partOfTheFleetCutOff(t *testing.T) {
	srv := startRedis(t)
	run := runFleet(t, srv, 50, 20, true, 20)
	t.Logf("%+v", run)
	assert.LessOrEqual(t, 100*float64(run.othersDropped)/float64(run.othersOffered), 1.0,
		"the healthy processes' calls dropped: %d of %d", run.othersDropped, run.othersOffered)
	assert.GreaterOrEqual(t, 100*float64(run.cutDropped)/float64(run.cutOffered), 90.0,
		"the cut-off processes' calls dropped from 2 s into the cut on: %d of %d", run.cutDropped, run.cutOffered)
}
