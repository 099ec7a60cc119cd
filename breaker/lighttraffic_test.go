package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
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
