package serverside

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestLimiter_noLoad_setsAFastMomentAside: past the start, handlers
// probed every second whose calls show no heavy tail read noLoad as the
// second lowest of the seconds remembered, once three are known: the
// lowest of many readings is a fast moment of the machine's. Not during
// the start, nor for slower handlers (their seconds between probes hold
// only intervals', a queue's), nor for a heavy tail's, nor with two
// seconds known.
func TestLimiter_noLoad_setsAFastMomentAside(t *testing.T) {
	const ms = time.Millisecond
	three := func() *Limiter {
		l, now := newStartedLimiter(5100*time.Microsecond, 32)
		sec := now.Unix()
		l.minima[(sec-1)%maxNoLoadSeconds] = 4800 * time.Microsecond
		l.minimaSpread[(sec-1)%maxNoLoadSeconds] = 0.2
		l.minima[(sec-2)%maxNoLoadSeconds] = 5200 * time.Microsecond
		return l
	}
	l := three()
	assert.Equal(t, 5100*time.Microsecond, l.noLoad(), "the second lowest of three seconds")
	assert.Zero(t, l.noLoadSpread(), "and the spread it was told to")

	l = three()
	l.minima[(l.minimaSec-2)%maxNoLoadSeconds] = 0
	assert.Equal(t, 4800*time.Microsecond, l.noLoad(), "two seconds known: the lowest")
	assert.Equal(t, 0.2, l.noLoadSpread())

	l = three()
	l.starting = true
	assert.Equal(t, 4800*time.Microsecond, l.noLoad(), "the start: the lowest")

	l = three()
	l.probeEvery = 2
	assert.Equal(t, 4800*time.Microsecond, l.noLoad(), "slower handlers: the lowest")

	l = three()
	l.tail = 2.2
	assert.Equal(t, 4800*time.Microsecond, l.noLoad(), "a heavy tail: the lowest")

	l = three()
	l.minima[(l.minimaSec-3)%maxNoLoadSeconds] = 1 * ms // older than memory
	assert.Equal(t, 5100*time.Microsecond, l.noLoad(), "seconds past memory do not count")
}
