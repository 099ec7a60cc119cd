package breaker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
)

// lightCall is a call of a light-traffic schedule: when it asks, from the
// breaker's start, and whether the dependency would answer it.
type lightCall struct {
	at time.Duration
	ok bool
}

// lightSchedule is a dependency called twice a second: healthy for 10 s,
// down for 10 s, not called for 3 s (more than a window), down for 5 s
// more, then healed for 10 s. The calls ask 30 ms into a bucket.
func lightSchedule() []lightCall {
	var calls []lightCall
	at := 30 * time.Millisecond
	add := func(n int, ok bool) {
		for range n {
			calls = append(calls, lightCall{at: at, ok: ok})
			at += 500 * time.Millisecond
		}
	}
	add(20, true)
	add(20, false)
	at += 3 * time.Second
	add(10, false)
	add(20, true)
	return calls
}

// runPolled runs calls through a breaker made with opts, reading its Stats
// every poll as well (never if poll is 0, and 10 ms into a bucket), and
// returns which calls were admitted and the Stats at the end.
func runPolled(t *testing.T, calls []lightCall, poll time.Duration, opts ...breaker.Option) ([]bool, breaker.Stats) {
	t.Helper()
	return runAt(t, calls, poll, criticality.Default, opts...)
}

// runAt is runPolled for calls that ask at level, through AllowCtx.
func runAt(t *testing.T, calls []lightCall, poll time.Duration, level criticality.Level,
	opts ...breaker.Option) ([]bool, breaker.Stats) {
	t.Helper()
	b, m := newBreaker(t, opts...)
	ctx := criticality.With(context.Background(), level)
	start := m.Now()
	admitted := make([]bool, len(calls))
	next := 10 * time.Millisecond // the next poll
	for i, c := range calls {
		for ; poll > 0 && next < c.at; next += poll {
			m.Set(start.Add(next))
			_ = b.Stats()
		}
		m.Set(start.Add(c.at))
		p, err := b.AllowCtx(ctx)
		if err != nil {
			continue
		}
		admitted[i] = true
		if c.ok {
			p.Accept()
		} else {
			p.Reject("refused")
		}
	}
	s := b.Stats()
	return admitted, s
}

// Regression test: a breaker's decisions do not depend on how often its
// windows are read. Stats, an exporter's poll or a fleet's publishing move
// the windows between calls, which reports the buckets without calls one
// at a time rather than together; the runs of buckets that agree (how long
// a dependency has been down, and a window without calls) must come out
// the same either way.
func TestBreaker_decisionsDoNotDependOnReads(t *testing.T) {
	calls := lightSchedule()
	want, wantStats := runPolled(t, calls, 0)
	wantStats.Reasons = nil
	for _, poll := range []time.Duration{
		50 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, time.Second,
	} {
		t.Run(fmt.Sprint("polled every ", poll), func(t *testing.T) {
			t.Parallel() // each Set of the mock clock pauses a millisecond
			got, gotStats := runPolled(t, calls, poll)
			assert.Equal(t, want, got, "the calls admitted")
			gotStats.Reasons = nil
			assert.Equal(t, wantStats, gotStats)
		})
	}
}

// Regression test: the windows a breaker keeps for calls at other levels
// than the default reported their finished buckets to the calls reached
// back for (WithEvidence) as if they were drops. A breaker whose calls all
// ask at one level drops exactly as one whose calls name none, on light
// traffic too.
func TestBreaker_AllowCtx_oneLevelOnLightTraffic(t *testing.T) {
	calls := lightSchedule()
	want, wantStats := runPolled(t, calls, 0)
	for _, level := range []criticality.Level{criticality.Sheddable, criticality.CriticalPlus} {
		t.Run(level.String(), func(t *testing.T) {
			got, gotStats := runAt(t, calls, 0, level)
			assert.Equal(t, want, got, "the calls admitted")
			assert.Equal(t, wantStats.Drops, gotStats.Drops)
			assert.Equal(t, wantStats.TotalDrops, gotStats.TotalDrops)
			assert.Equal(t, wantStats.DropProbability, gotStats.DropProbability)
		})
	}
}
