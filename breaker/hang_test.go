package breaker_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/chain"
)

// phase is a stretch of a dependency's life for callers: how long its calls
// take, and whether they answer at all.
type phase struct {
	length  time.Duration
	latency func(r *rand.Rand) time.Duration // how long a call takes; hang for none
}

// hang stands for a call that never answers: it ends at the client's
// timeout.
const hang = time.Duration(-1)

func fixed(d time.Duration) func(*rand.Rand) time.Duration {
	return func(*rand.Rand) time.Duration { return d }
}

// slot is what the callers saw in one step of virtual time.
type slot struct {
	at               time.Duration // since the run began
	made, dropped    int
	reachedHung, out int // calls admitted into a hang; calls out at the step's end
}

// pendingCall is an admitted call that has not ended.
type pendingCall struct {
	p     srebreaker.Promise
	endAt time.Duration // when it ends, since the run began
	fails bool          // it ends at the client's timeout: a failure
}

// drive calls b at rate calls a second, in steps of step of mock time,
// through phases, each call ending when its latency says, or failing at
// timeout when it hangs. It returns what each step saw.
func drive(t *testing.T, b breaker.Breaker, mock *clock.Mock, rate int, step, timeout time.Duration,
	phases ...phase) []slot {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var pending []pendingCall
	var slots []slot
	var now time.Duration
	perStep := float64(rate) * step.Seconds()
	carry := 0.0
	for _, ph := range phases {
		for end := now + ph.length; now < end; now += step {
			s := slot{at: now}
			// The calls that end by now, in the order they end.
			kept := pending[:0]
			for _, c := range pending {
				switch {
				case c.endAt > now:
					kept = append(kept, c)
				case c.fails:
					c.p.Reject("context deadline exceeded")
				default:
					c.p.Accept()
				}
			}
			pending = kept
			carry += perStep
			for ; carry >= 1; carry-- {
				s.made++
				p, err := b.Allow()
				if err != nil {
					s.dropped++
					continue
				}
				latency := ph.latency(r)
				switch {
				case latency == hang:
					s.reachedHung++
					pending = append(pending, pendingCall{p: p, endAt: now + timeout, fails: true})
				case latency > timeout:
					pending = append(pending, pendingCall{p: p, endAt: now + timeout, fails: true})
				case latency < step:
					p.Accept() // ends within the step
				default:
					pending = append(pending, pendingCall{p: p, endAt: now + latency})
				}
			}
			s.out = len(pending)
			slots = append(slots, s)
			mock.Add(step)
		}
	}
	return slots
}

// dropShare returns the share of the calls made in slots that were dropped.
func shareDropped(slots []slot) float64 {
	made, dropped := 0, 0
	for _, s := range slots {
		made, dropped = made+s.made, dropped+s.dropped
	}
	if made == 0 {
		return 0
	}
	return float64(dropped) / float64(made)
}

// sustainedSlot and sustainedSlots define "sustained", as the simulator
// does: 3 slots of 100 ms in a row, slots without calls skipped.
const (
	sustainedSlot  = 100 * time.Millisecond
	sustainedSlots = 3
)

// sustained returns the time from from to the end of the first slot of
// sustainedSlots in a row, before until, in each of which the share of
// calls dropped meets ok; -1 if none.
func sustained(slots []slot, from, until time.Duration, ok func(dropped float64) bool) time.Duration {
	var in []slot // of sustainedSlot each
	for _, s := range slots {
		if s.at < from || s.at >= until {
			continue
		}
		i := int((s.at - from) / sustainedSlot)
		for len(in) <= i {
			in = append(in, slot{at: from + time.Duration(len(in))*sustainedSlot})
		}
		in[i].made += s.made
		in[i].dropped += s.dropped
	}
	first, run := 0, 0
	for i, s := range in {
		if s.made == 0 {
			continue
		}
		if !ok(shareDropped(in[i : i+1])) {
			run = 0
			continue
		}
		if run == 0 {
			first = i
		}
		if run++; run == sustainedSlots {
			return time.Duration(first+1) * sustainedSlot
		}
	}
	return -1
}

// A dependency that stops answering, at 200 calls a second with a 30 s
// client timeout, is shed long before the first timeout comes back, and
// let back in at once when it heals, although the calls made during the
// hang keep timing out for 30 s more (issue 27).
func TestBreaker_hang_shedBeforeTheTimeouts(t *testing.T) {
	for _, tc := range []struct {
		rate               int
		step               time.Duration
		shedBy, readmitBy  time.Duration
		maxReached, maxOut float64
	}{
		{rate: 200, step: 50 * time.Millisecond, shedBy: 2500 * time.Millisecond, readmitBy: time.Second, maxReached: 0.10, maxOut: 800},
		{rate: 20, step: 50 * time.Millisecond, shedBy: 3 * time.Second, readmitBy: 1500 * time.Millisecond, maxReached: 0.15, maxOut: 800},
		{rate: 2000, step: 50 * time.Millisecond, shedBy: 3 * time.Second, readmitBy: 1500 * time.Millisecond, maxReached: 0.15, maxOut: 8000},
		// Busy buckets (40 calls) whose calls stop coming back: the
		// admissions read the clock often enough to date them.
		{rate: 400, step: 10 * time.Millisecond, shedBy: 1500 * time.Millisecond, readmitBy: time.Second, maxReached: 0.10, maxOut: 800},
	} {
		t.Run(fmt.Sprintf("%d per second", tc.rate), func(t *testing.T) {
			b, mock := newBreaker(t)
			const healthy, hangs, healed = 5 * time.Second, 40 * time.Second, 32 * time.Second
			slots := drive(t, b, mock, tc.rate, tc.step, 30*time.Second,
				phase{healthy, fixed(5 * time.Millisecond)},
				phase{hangs, fixed(hang)},
				phase{healed, fixed(5 * time.Millisecond)})

			shed := sustained(slots, healthy, healthy+hangs, func(d float64) bool { return d >= 0.9 })
			assert.True(t, shed >= 0 && shed <= tc.shedBy, "90 %% dropped %v after the hang began", shed)
			readmit := sustained(slots, healthy+hangs, healthy+hangs+healed,
				func(d float64) bool { return d <= 0.05 })
			assert.True(t, readmit >= 0 && readmit <= tc.readmitBy, "95 %% admitted %v after healing", readmit)

			var afterHealing []slot
			for _, s := range slots {
				if s.at >= healthy+hangs+2*time.Second {
					afterHealing = append(afterHealing, s)
				}
			}
			assert.Less(t, shareDropped(afterHealing), 0.01,
				"dropped while the hang's calls time out, from 2 s after healing on")

			made, reached, peak := 0, 0, 0
			for _, s := range slots {
				if s.at >= healthy && s.at < healthy+hangs {
					made, reached = made+s.made, reached+s.reachedHung
				}
				peak = max(peak, s.out)
			}
			assert.LessOrEqual(t, float64(reached)/float64(made), tc.maxReached, "share of the hang's calls that reached it")
			assert.LessOrEqual(t, float64(peak), tc.maxOut, "calls out at the peak")
			t.Logf("%d/s: 90 %% dropped after %v, 95 %% admitted %v after healing, %.1f %% reached the hang, %d out at the peak",
				tc.rate, shed, readmit, 100*float64(reached)/float64(made), peak)
		})
	}
}

// The plain formula counts a call when it comes back, as the card says: a
// hang is shed only when the timeouts come back.
func TestBreaker_hang_plainFormulaWaitsForTheTimeouts(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithPlainFormula())
	slots := drive(t, b, mock, 200, 50*time.Millisecond, 5*time.Second,
		phase{5 * time.Second, fixed(5 * time.Millisecond)},
		phase{10 * time.Second, fixed(hang)})
	var before, after []slot
	for _, s := range slots {
		switch {
		case s.at >= 5*time.Second && s.at < 10*time.Second:
			before = append(before, s)
		case s.at >= 11*time.Second:
			after = append(after, s)
		}
	}
	assert.Zero(t, shareDropped(before), "nothing dropped before the first timeout")
	assert.Greater(t, shareDropped(after), 0.5, "shed once the timeouts come back")
}

// heavyTail returns latencies with a median of 5 ms, a 99th percentile of
// 200 ms and a 99.9th of 1 s, log-linear between, up to 2 s.
func heavyTail(r *rand.Rand) time.Duration {
	u := r.Float64()
	lerp := func(u0, u1 float64, d0, d1 time.Duration) time.Duration {
		f := (u - u0) / (u1 - u0)
		return time.Duration(float64(d0) * pow(float64(d1)/float64(d0), f))
	}
	switch {
	case u < 0.5:
		return lerp(0, 0.5, time.Millisecond, 5*time.Millisecond)
	case u < 0.99:
		return lerp(0.5, 0.99, 5*time.Millisecond, 200*time.Millisecond)
	case u < 0.999:
		return lerp(0.99, 0.999, 200*time.Millisecond, time.Second)
	}
	return lerp(0.999, 1, time.Second, 2*time.Second)
}

// A healthy dependency whose calls are slow now and then, or slow as a
// rule, never has a call dropped: what is normal is learned from its own
// calls.
func TestBreaker_hang_healthySlowCallsAreNeverDropped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rate    int
		step    time.Duration
		latency func(*rand.Rand) time.Duration
	}{
		{"heavy tail", 200, 20 * time.Millisecond, heavyTail},
		{"uniform 1-5 s", 50, 100 * time.Millisecond, func(r *rand.Rand) time.Duration {
			return time.Second + time.Duration(r.Int64N(int64(4*time.Second)))
		}},
		{"long polls of 20 s", 10, 100 * time.Millisecond, fixed(20 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, mock := newBreaker(t)
			slots := drive(t, b, mock, tc.rate, tc.step, time.Minute, phase{time.Minute, tc.latency})
			assert.Zero(t, shareDropped(slots), "false drops")
		})
	}
}

// With a slow-call threshold, a dependency that slows down is shed as one
// that fails, and let back in when it is fast again.
func TestBreaker_hang_slowCallThreshold(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithSlowCall(250*time.Millisecond))
	const healthy, slow, fast = 5 * time.Second, 20 * time.Second, 5 * time.Second
	slots := drive(t, b, mock, 200, 50*time.Millisecond, 30*time.Second,
		phase{healthy, fixed(5 * time.Millisecond)},
		phase{slow, fixed(2 * time.Second)},
		phase{fast, fixed(5 * time.Millisecond)})
	assert.Zero(t, shareDropped(slots[:int(healthy/(50*time.Millisecond))]), "no drop while fast")
	shed := sustained(slots, healthy, healthy+slow, func(d float64) bool { return d >= 0.9 })
	assert.True(t, shed >= 0 && shed <= 1500*time.Millisecond, "90 %% dropped %v after the slowdown began", shed)
	readmit := sustained(slots, healthy+slow, healthy+slow+fast, func(d float64) bool { return d <= 0.05 })
	assert.True(t, readmit >= 0 && readmit <= time.Second, "95 %% admitted %v after the latency returned", readmit)
}

// A call slower than the threshold is a failure; one faster is a success;
// a call ignored is neither, and no longer out.
func TestBreaker_hang_slowCallCountsAsAFailure(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithSlowCall(300*time.Millisecond))
	p, err := b.Allow()
	require.NoError(t, err)
	mock.Add(500 * time.Millisecond)
	p.Accept()
	st := b.Stats()
	assert.Equal(t, int64(1), st.Failures, "a success after 500 ms is a failure")
	require.NotEmpty(t, st.Reasons)
	assert.Contains(t, st.Reasons[0].Text, "slow call: longer than 300ms")

	p, err = b.Allow()
	require.NoError(t, err)
	mock.Add(100 * time.Millisecond)
	p.Accept()
	st = b.Stats()
	assert.Equal(t, int64(1), st.Successes, "a success after 100 ms is a success")
}

// A call made during a hang that fails after the dependency healed counts
// no more: it was counted when it became overdue.
func TestBreaker_hang_lateOutcomeOfAnOverdueCallCountsNoMore(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithSlowCall(200*time.Millisecond))
	var out []srebreaker.Promise
	for range 10 {
		p, err := b.Allow()
		require.NoError(t, err)
		out = append(out, p)
	}
	mock.Add(500 * time.Millisecond)
	succeed(t, b, 1) // reads the clock: the calls out are overdue
	st := b.Stats()
	assert.Equal(t, int64(10), st.Failures, "the calls out counted as failures")
	assert.Contains(t, st.Reasons[0].Text, "no answer within 200ms")
	for _, p := range out {
		p.Reject("context deadline exceeded")
	}
	mock.Add(100 * time.Millisecond)
	succeed(t, b, 1)
	st = b.Stats()
	assert.Equal(t, int64(10), st.Failures, "their timeouts counted no more")
}

// An ignored call is back: it never becomes overdue.
func TestBreaker_hang_ignoredCallIsNotOut(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithSlowCall(200*time.Millisecond))
	p, err := b.Allow()
	require.NoError(t, err)
	srebreaker.Ignore(p)
	mock.Add(time.Second)
	succeed(t, b, 1)
	st := b.Stats()
	assert.Zero(t, st.Failures, "no failure")
}

// A call given up while its request waits on a guarded call, and taken
// again (chain.Resumer), is timed from its return: the wait is not its,
// and it is counted once.
func TestBreaker_hang_resumedCallIsTimedFromItsReturn(t *testing.T) {
	b, mock := newBreaker(t, breaker.WithSlowCall(200*time.Millisecond))
	p, err := b.Allow()
	require.NoError(t, err)
	r, ok := p.(chain.Resumer)
	require.True(t, ok, "a breaker's promise is a chain.Resumer")
	r.Ignore()
	mock.Add(time.Second)
	p = r.Resumed(chain.Resuming{})
	mock.Add(100 * time.Millisecond)
	p.Accept()
	st := b.Stats()
	assert.Zero(t, st.TotalFailures, "the second away is not the call's")
	assert.Equal(t, int64(1), st.TotalSuccesses, "counted once")

	p, err = b.Allow()
	require.NoError(t, err)
	r = p.(chain.Resumer)
	r.Ignore()
	p = r.Resumed(chain.Resuming{})
	mock.Add(500 * time.Millisecond)
	succeed(t, b, 1) // reads the clock: the call taken again is out, overdue
	st = b.Stats()
	assert.Equal(t, int64(1), st.TotalFailures, "a call taken again is watched as any call out")
	assert.Contains(t, st.Reasons[0].Text, "no answer within 200ms")
	p.Accept()
}

func TestWithSlowCall_invalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []breaker.Option
	}{
		{"zero", []breaker.Option{breaker.WithSlowCall(0)}},
		{"negative", []breaker.Option{breaker.WithSlowCall(-time.Second)}},
		{"under a bucket", []breaker.Option{breaker.WithSlowCall(50 * time.Millisecond)}},
		{"over 2 minutes", []breaker.Option{breaker.WithSlowCall(3 * time.Minute)}},
		{"absurd", []breaker.Option{breaker.WithSlowCall(time.Duration(1<<63 - 1))}},
		{"with the plain formula", []breaker.Option{breaker.WithPlainFormula(), breaker.WithSlowCall(time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := breaker.New(tc.opts...)
			require.ErrorIs(t, err, breaker.ErrInvalidOption)
			assert.Contains(t, err.Error(), "WithSlowCall(")
		})
	}
	_, err := breaker.New(breaker.WithSlowCall(100 * time.Millisecond))
	assert.NoError(t, err, "a bucket is enough")
}

func pow(x, y float64) float64 { return math.Pow(x, y) }

// Fan-outs of 50 calls a second apart, each answered in 10 ms: past its
// first calls a busy cohort admits without reading the clock, so the calls
// of a fan-out join the cohort of the one before, made a second earlier.
// They are timed from when they are known to be out, never from the
// earlier burst: a scrape while they are out, or their answers, find no
// hang and no slow call.
func TestBreaker_hang_callsAfterAPauseAreNotTimedFromTheBurstBefore(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []breaker.Option
	}{
		{"learned threshold", nil},
		{"slow-call threshold", []breaker.Option{breaker.WithSlowCall(200 * time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, mock := newBreaker(t, tc.opts...)
			learn(t, b, mock)
			for range 10 {
				var out []srebreaker.Promise
				for range 50 {
					p, err := b.Allow()
					require.NoError(t, err)
					out = append(out, p)
				}
				b.Stats() // a scrape while they are out
				mock.Add(10 * time.Millisecond)
				for _, p := range out {
					p.Accept()
				}
				mock.Add(time.Second)
			}
			st := b.Stats()
			assert.Zero(t, st.TotalFailures, "failures: %v", st.Reasons)
			assert.Equal(t, int64(60+500), st.TotalSuccesses)

			for range 50 { // a fan-out that hangs: out from the reading on
				_, err := b.Allow()
				require.NoError(t, err)
			}
			mock.Add(10 * time.Millisecond)
			assert.Zero(t, b.Stats().TotalFailures, "out for 10 ms")
			mock.Add(time.Second)
			assert.Equal(t, int64(50), b.Stats().TotalFailures, "out for a second: overdue")
		})
	}
}
