package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// outageAt2PerSecond runs 10 s of healthy calls, 20 s of an outage and
// 10 s healed, 2 calls a second, and returns how many outage calls reached
// the dependency and how long after healing the first call was admitted.
func outageAt2PerSecond(t *testing.T, opts ...breaker.Option) (reached int, readmitted time.Duration) {
	t.Helper()
	b, m := newBreaker(t, opts...)
	call := func(ok bool) bool {
		p, err := b.Allow()
		if err != nil {
			return false
		}
		if ok {
			p.Accept()
		} else {
			p.Reject("connection refused")
		}
		return true
	}
	tick := func() { m.Add(500 * time.Millisecond) }
	for range 20 {
		call(true)
		tick()
	}
	for range 40 {
		if call(false) {
			reached++
		}
		tick()
	}
	readmitted = -1
	for i := range 20 {
		if call(true) && readmitted < 0 {
			readmitted = time.Duration(i) * 500 * time.Millisecond
		}
		tick()
	}
	return reached, readmitted
}

// Regression test for issue 12: at 2 calls a second, a 2 s window never
// holds more than protection's failures, and the defaults shed nothing of
// an outage; reaching back for 40 calls, they shed most of it and readmit
// the healed dependency within seconds.
func TestBreaker_Allow_shedsAnOutageOnLightTraffic(t *testing.T) {
	reached, readmitted := outageAt2PerSecond(t)
	assert.LessOrEqual(t, reached, 16, "at most 40 %% of the 40 outage calls reach the dependency")
	assert.GreaterOrEqual(t, readmitted, time.Duration(0), "readmitted")
	assert.LessOrEqual(t, readmitted, 5*time.Second, "readmitted within 5 s")

	reached, _ = outageAt2PerSecond(t, breaker.WithEvidence(0, 0))
	assert.Equal(t, 40, reached, "the window alone sheds nothing at 2 calls a second")
	reached, _ = outageAt2PerSecond(t, breaker.WithPlainFormula())
	assert.Equal(t, 40, reached, "nor does the plain formula")
}

func TestBreaker_hotPathDoesNotAllocateOnLightTraffic(t *testing.T) {
	b, m := newBreaker(t)
	for range 6 { // 3 s of failures, 2 a second: shed on the calls reached back for
		fail(t, b, 1, "refused")
		m.Add(500 * time.Millisecond)
	}
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		if p, err := b.Allow(); err == nil {
			p.Reject("refused")
		}
	}), "Allow reading back past the window")
}

// outageAt20PerSecond is what outageAt20PerSecondFigures measured.
type outageAt20PerSecond struct {
	high, sampled int           // calls of the outage after its first second: dropped with p ≥ 0.9, all
	reached, sent int           // calls of the outage: admitted, all
	readmitted    time.Duration // from healing to the first admitted call; -1 for none
	droppedAfter  int           // calls dropped after that one
	starts, stops int           // SheddingChanged events
}

// outageAt20PerSecondFigures runs 5 s of healthy calls, 30 s of an outage
// and 10 s healed, 20 calls a second (40 a window), on seed's draws.
func outageAt20PerSecondFigures(t *testing.T, seed uint64) outageAt20PerSecond {
	t.Helper()
	var f outageAt20PerSecond
	b, m := newBreaker(t, breaker.WithProba(proba.NewSeeded(seed)), breaker.WithListener(func(e breaker.Event) {
		if e.Kind != breaker.SheddingChanged {
			return
		}
		if e.Shedding {
			f.starts++
		} else {
			f.stops++
		}
	}))
	const step = 50 * time.Millisecond
	const healthy, outage, healed = 5 * time.Second, 30 * time.Second, 10 * time.Second
	f.readmitted = -1
	for at := time.Duration(0); at < healthy+outage+healed; at += step {
		down := at >= healthy && at < healthy+outage
		if down && at >= healthy+time.Second {
			f.sampled++
			if b.Stats().DropProbability >= 0.9 {
				f.high++
			}
		}
		p, err := b.Allow()
		switch {
		case err != nil && at >= healthy+outage && f.readmitted >= 0:
			f.droppedAfter++
		case err != nil:
		case down:
			f.reached++
			p.Reject("connection refused")
		default:
			p.Accept()
			if at >= healthy+outage && f.readmitted < 0 {
				f.readmitted = at - healthy - outage
			}
		}
		if down {
			f.sent++
		}
		m.Add(step)
	}
	return f
}

// Regression test for issue 42: at 20 calls a second, the draws at a drop
// probability of 0.98 let a call of an outage through every 2.5 s on
// average, at uneven times, and a healed dependency waited seconds for the
// next; the outage's first two seconds were shed at less than 0.9. Paced,
// a call is let through every second, and its success readmits at once.
func TestBreaker_Allow_readmitsWithinASecondAt20PerSecond(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		f := outageAt20PerSecondFigures(t, seed)
		assert.GreaterOrEqual(t, float64(f.high), 0.95*float64(f.sampled),
			"seed %d: %d of %d calls after the outage's first second found p ≥ 0.9", seed, f.high, f.sampled)
		assert.LessOrEqual(t, float64(f.reached), 0.07*float64(f.sent),
			"seed %d: %d of the %d outage calls reached the dependency", seed, f.reached, f.sent)
		assert.GreaterOrEqual(t, f.readmitted, time.Duration(0), "seed %d: readmitted", seed)
		assert.LessOrEqual(t, f.readmitted, time.Second, "seed %d: the first call after healing within a second", seed)
		assert.Equal(t, 0, f.droppedAfter, "seed %d: no drop after the first success", seed)
		assert.Equal(t, 1, f.starts, "seed %d: shedding started once", seed)
		assert.Equal(t, 1, f.stops, "seed %d: and stopped once", seed)
	}
}
