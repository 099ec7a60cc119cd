package breaker_test

import (
	"bytes"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// listen returns a listener that forwards events, and a function that
// waits for the next one.
func listen(t *testing.T) (func(breaker.Event), func() breaker.Event) {
	t.Helper()
	ch := make(chan breaker.Event, 1<<16)
	next := func() breaker.Event {
		t.Helper()
		select {
		case e := <-ch:
			return e
		case <-time.After(10 * time.Second): // a guard against a hang, not a wait for time to pass
			t.Fatal("no event")
			return breaker.Event{}
		}
	}
	return func(e breaker.Event) { ch <- e }, next
}

// outageThenHeal runs an outage of 1 s and a recovery of 3 s, 100 calls per
// 100 ms bucket.
func outageThenHeal(t *testing.T, b breaker.Breaker, m interface{ Add(time.Duration) }) {
	t.Helper()
	for range 10 {
		succeed(t, b, 100)
		m.Add(100 * time.Millisecond)
	}
	for range 10 {
		fail(t, b, 100, "connection refused")
		m.Add(100 * time.Millisecond)
	}
	for range 30 {
		succeed(t, b, 100)
		m.Add(100 * time.Millisecond)
	}
}

func TestWithListener_startedThenStopped(t *testing.T) {
	l, next := listen(t)
	b, m := newBreaker(t, breaker.WithName("payments"), breaker.WithListener(l))
	start := m.Now()
	outageThenHeal(t, b, m)

	started := next()
	assert.True(t, started.Shedding)
	assert.Equal(t, "payments", started.Breaker)
	assert.Greater(t, started.DropProbability, 0.0)
	require.NotEmpty(t, started.Reasons)
	assert.Equal(t, "connection refused", started.Reasons[0].Text)
	assert.WithinRange(t, started.At, start.Add(time.Second), start.Add(1300*time.Millisecond),
		"within a few buckets of the outage")

	stopped := next()
	assert.False(t, stopped.Shedding)
	assert.Equal(t, "payments", stopped.Breaker)
	assert.Nil(t, stopped.Reasons)
	assert.False(t, stopped.At.Before(started.At.Add(breaker.DefaultWindow)), "after a whole window without drops")
}

func TestWithListener_listenerMayCallTheBreaker(t *testing.T) {
	done := make(chan breaker.Stats, 2)
	var b breaker.Breaker
	l := func(breaker.Event) {
		_, _ = b.Allow() // would deadlock if listeners ran under the breaker's lock
		s := b.Stats()
		done <- s
	}
	b, m := newBreaker(t, breaker.WithListener(l))
	outageThenHeal(t, b, m)
	for range 2 {
		select {
		case s := <-done:
			assert.NotZero(t, s.TotalFailures)
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
	}
}

func TestWithListener_panicsDoNotSpread(t *testing.T) {
	l, next := listen(t)
	b, m := newBreaker(t, breaker.WithListener(func(breaker.Event) { panic("listener bug") }), breaker.WithListener(l))
	outageThenHeal(t, b, m)
	assert.True(t, next().Shedding, "the next listener still hears")
	assert.False(t, next().Shedding)
}

func TestWithListener_perRegistry(t *testing.T) {
	l, next := listen(t)
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m), breaker.WithListener(l))
	a, c := r.Get("a"), r.Get("c")
	for range 3 {
		fail(t, a, 100, "down")
		fail(t, c, 100, "down")
		m.Add(100 * time.Millisecond)
	}
	fail(t, a, 1, "down")
	fail(t, c, 1, "down")
	names := map[string]bool{next().Breaker: true, next().Breaker: true}
	assert.Equal(t, map[string]bool{"a": true, "c": true}, names)
}

func TestWithListener_calledOnTheCallersGoroutine(t *testing.T) {
	var got []bool // no lock: the listener runs on this goroutine
	b, m := newBreaker(t, breaker.WithListener(func(e breaker.Event) { got = append(got, e.Shedding) }))
	for range 3 {
		fail(t, b, 100, "down")
		m.Add(100 * time.Millisecond)
	}
	b.Allow() //nolint:errcheck // the call that finds the check due tells the listener before it returns
	require.NotEmpty(t, got)
	assert.True(t, got[0])
}

// A listener that ends its goroutine, as t.Fatal does, must not silence any
// other breaker's events, nor the other listeners of its own (issue 11,
// item 4).
func TestWithListener_goexitLosesNoOneElsesEvents(t *testing.T) {
	var after []bool
	bad, m := newBreaker(t,
		breaker.WithListener(func(breaker.Event) { runtime.Goexit() }),
		breaker.WithListener(func(e breaker.Event) { after = append(after, e.Shedding) }))
	done := make(chan struct{})
	go func() { // the goroutine the listener ends
		defer close(done)
		for range 3 {
			fail(t, bad, 100, "down")
			m.Add(100 * time.Millisecond)
		}
		bad.Allow() //nolint:errcheck // the listener ends this goroutine here
	}()
	<-done
	assert.Equal(t, []bool{true}, after, "the next listener was told first")

	l, next := listen(t)
	good, m2 := newBreaker(t, breaker.WithListener(l))
	for range 3 {
		fail(t, good, 100, "down")
		m2.Add(100 * time.Millisecond)
	}
	good.Allow() //nolint:errcheck // only the event matters
	assert.True(t, next().Shedding, "another breaker's events still arrive")
}

// A program that only polls Stats must see shedding start (issue 11, item 5).
func TestWithListener_statsPollingSeesSheddingStart(t *testing.T) {
	l, next := listen(t)
	b, m := newBreaker(t, breaker.WithListener(l))
	for range 3 {
		fail(t, b, 100, "down")
		m.Add(5 * time.Millisecond)
		b.Stats()
	}
	for range 40 { // no call at all, only Stats every 5 ms
		m.Add(5 * time.Millisecond)
		b.Stats()
	}
	assert.True(t, next().Shedding)
}

func TestWithLogger(t *testing.T) {
	var buf safeBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l, next := listen(t)
	b, m := newBreaker(t, breaker.WithName("payments"), breaker.WithLogger(logger), breaker.WithListener(l))
	outageThenHeal(t, b, m)
	next()
	next() // the logger ran before this listener, for both events
	out := buf.String()
	assert.Regexp(t, `level=WARN msg="breaker started shedding" breaker=payments drop_probability=0\.\d\d? `, out,
		"two decimals at most")
	assert.Contains(t, out, `reasons="connection refused (×5)"`, "each reason once, with its count")
	assert.Contains(t, out, `level=INFO msg="breaker stopped shedding" breaker=payments`)
	assert.Equal(t, 2, strings.Count(out, "\n"), "one line per change")
}

func TestWithLogger_flappingLogsOncePerWindow(t *testing.T) {
	var buf safeBuffer
	l, next := listen(t)
	b, m := newBreaker(t, breaker.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))), breaker.WithListener(l))
	for range 10 { // a dependency that fails and recovers every 200 ms, for 2 s: one window
		fail(t, b, 100, "down")
		m.Add(100 * time.Millisecond)
		succeed(t, b, 100)
		m.Add(100 * time.Millisecond)
	}
	assert.True(t, next().Shedding)
	assert.Equal(t, 1, strings.Count(buf.String(), "\n"), "shedding never stopped for a whole window")
}

func TestWithListener_hotPathStaysFreeOfAllocations(t *testing.T) {
	b := breaker.MustNew(breaker.WithListener(func(breaker.Event) {}))
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow()
		p.Accept()
	}))
}

// safeBuffer is a bytes.Buffer a logger on the event goroutine may write to
// while the test reads it.
type safeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Regression: a burst of 100 failures drove the drop probability to 0.87
// and dropped calls for most of a bucket before the warning was logged,
// with a later call.
func TestWithLogger_firstDropIsLoggedWithIt(t *testing.T) {
	var buf safeBuffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	b, m := newBreaker(t, breaker.WithName("pricing"), breaker.WithLogger(logger))
	succeed(t, b, 20)
	m.Add(100 * time.Millisecond) // the clock stands still from here on: every call is in one bucket
	failed := 0
	for ; ; failed++ {
		require.Less(t, failed, 100, "a burst of failures sheds within the bucket")
		p, err := b.Allow()
		if err != nil {
			require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
			break
		}
		require.Empty(t, buf.String(), "nothing logged before the first drop")
		p.Reject("HTTP 500 Internal Server Error")
	}
	t.Logf("the first drop came after %d failures", failed)
	out := buf.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), "the first drop is logged with it, once: %s", out)
	assert.Regexp(t, `level=WARN msg="breaker started shedding" breaker=pricing drop_probability=0\.\d\d? reasons="HTTP 500 Internal Server Error \(×5\)"`, out)
	for range 1000 {
		if p, err := b.Allow(); err == nil {
			p.Reject("HTTP 500 Internal Server Error")
		}
	}
	m.Add(100 * time.Millisecond)
	_ = b.Stats()
	assert.Equal(t, 1, strings.Count(buf.String(), "\n"), "the bucket's end does not tell it again")
}
