package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

var errBoom = errors.New("boom")

func newMock() *clock.Mock {
	m := clock.NewMock()
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	return m
}

// newBreaker returns a breaker on a mock clock with a seeded random source.
func newBreaker(t *testing.T, opts ...breaker.Option) (breaker.Breaker, *clock.Mock) {
	t.Helper()
	m := newMock()
	b, err := breaker.New(append([]breaker.Option{
		breaker.WithName("test"), breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)),
	}, opts...)...)
	require.NoError(t, err)
	return b, m
}

// fail records n failures through Allow and Reject.
func fail(t *testing.T, b breaker.Breaker, n int, reason string) {
	t.Helper()
	for range n {
		p, err := b.Allow()
		if err == nil {
			p.Reject(reason)
		}
	}
}

// succeed records n successes through Allow and Accept.
func succeed(t *testing.T, b breaker.Breaker, n int) {
	t.Helper()
	for range n {
		p, err := b.Allow()
		if err == nil {
			p.Accept()
		}
	}
}

// dropShare asks n times without reporting anything, so the state stays as
// it is, and returns the share of calls dropped.
func dropShare(b breaker.Breaker, n int) float64 {
	dropped := 0
	for range n {
		if _, err := b.Allow(); err != nil {
			dropped++
		}
	}
	return float64(dropped) / float64(n)
}

// plainRatio is the plain formula, equation 21-1 of the SRE book, the
// reference that the behaviour tests compare drop shares with:
// max(0, (total − protection − k·accepts) / (total + 1)).
func plainRatio(total, accepts int64, k, protection float64) float64 {
	return max(0, (float64(total)-protection-k*float64(accepts))/float64(total+1))
}

func TestNew_defaults(t *testing.T) {
	a, err := breaker.New()
	require.NoError(t, err)
	b := breaker.MustNew(breaker.WithName(""))
	assert.True(t, strings.HasPrefix(a.Name(), "breaker-"), "random name %q", a.Name())
	assert.NotEqual(t, a.Name(), b.Name(), "each unnamed breaker gets its own name")
	assert.Equal(t, "payments", breaker.MustNew(breaker.WithName("payments")).Name())
}

func TestNew_invalidOptions(t *testing.T) {
	for _, tc := range []struct {
		opt  breaker.Option
		want string
	}{
		{breaker.WithK(0.5), "breaker: invalid option: WithK(0.5): K must be a finite number of at least 1"},
		{breaker.WithK(0), "breaker: invalid option: WithK(0): K must be a finite number of at least 1"},
		{breaker.WithK(math.NaN()), "breaker: invalid option: WithK(NaN): K must be a finite number of at least 1"},
		{breaker.WithK(math.Inf(1)), "breaker: invalid option: WithK(+Inf): K must be a finite number of at least 1"},
		{breaker.WithProtection(-1), "breaker: invalid option: WithProtection(-1): protection must be at least 0"},
		{breaker.WithWindow(0), "breaker: invalid option: WithWindow(0s): window must be positive"},
		{breaker.WithWindow(-time.Second), "breaker: invalid option: WithWindow(-1s): window must be positive"},
		{breaker.WithBuckets(0), "breaker: invalid option: tuning.Buckets(0): buckets must be between 1 and 65536"},
		{breaker.WithBuckets(-4), "breaker: invalid option: tuning.Buckets(-4): buckets must be between 1 and 65536"},
		{breaker.WithBuckets(1 << 20), "breaker: invalid option: tuning.Buckets(1048576): buckets must be between 1 and 65536"},
		{breaker.WithWindow(10 * time.Millisecond), "breaker: invalid option: WithWindow(10ms): window must be at least 20ms, 1ms for each of its 20 buckets"},
		{breaker.WithAggression(0.5), "breaker: invalid option: tuning.Aggression(0.5): aggression must be a number from 1 to 10"},
		{breaker.WithAggression(math.NaN()), "breaker: invalid option: tuning.Aggression(NaN): aggression must be a number from 1 to 10"},
		{breaker.WithAggression(math.Inf(1)), "breaker: invalid option: tuning.Aggression(+Inf): aggression must be a number from 1 to 10"},
		{breaker.WithAggression(10.5), "breaker: invalid option: tuning.Aggression(10.5): aggression must be a number from 1 to 10"},
		{breaker.WithEvidence(-1, 0), "breaker: invalid option: tuning.Evidence{-1, 0s}: calls must be at least 0"},
		{breaker.WithEvidence(40, time.Second), "breaker: invalid option: tuning.Evidence{40, 1s}: horizon must be from the window (2s) to 1024 windows"},
		{breaker.WithEvidence(40, 2049*time.Second), "breaker: invalid option: tuning.Evidence{40, 34m9s}: horizon must be from the window (2s) to 1024 windows"},
		{breaker.WithEvidence(0, -time.Second), "breaker: invalid option: tuning.Evidence{0, -1s}: horizon must be from the window (2s) to 1024 windows"},
		{breaker.WithListener(nil), "breaker: invalid option: WithListener(nil): listener must not be nil"},
		{breaker.WithLogger(nil), "breaker: invalid option: WithLogger(nil): logger must not be nil"},
		{breaker.WithClock(nil), "breaker: invalid option: WithClock(nil): clock must not be nil"},
		{breaker.WithProba(nil), "breaker: invalid option: WithProba(nil): proba must not be nil"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			b, err := breaker.New(tc.opt)
			assert.Nil(t, b)
			assert.EqualError(t, err, tc.want)
			assert.ErrorIs(t, err, breaker.ErrInvalidOption)
			assert.PanicsWithValue(t, tc.want, func() { breaker.MustNew(tc.opt) })
			assert.PanicsWithValue(t, tc.want, func() { breaker.MustNewRegistry(tc.opt) })
		})
	}
}

func TestNew_smallestValidOptions(t *testing.T) {
	_, err := breaker.New(breaker.WithK(1), breaker.WithProtection(0), breaker.WithWindow(time.Millisecond), breaker.WithBuckets(1))
	assert.NoError(t, err)
	_, err = breaker.New(breaker.WithWindow(40*time.Millisecond), breaker.WithBuckets(40))
	assert.NoError(t, err, "exactly 1ms per bucket is allowed")
	_, err = breaker.New(breaker.WithEvidence(1, 2*time.Second))
	assert.NoError(t, err, "a horizon of one window")
	_, err = breaker.New(breaker.WithEvidence(0, 0), breaker.WithWindow(time.Millisecond), breaker.WithBuckets(1))
	assert.NoError(t, err, "evidence off")
	_, err = breaker.New(breaker.WithEvidence(40, 2048*time.Second))
	assert.NoError(t, err, "a horizon of 1,024 windows")
}

func TestBreaker_Allow_healthyTrafficNeverDrops(t *testing.T) {
	b, m := newBreaker(t)
	for second := range 30 {
		for i := range 400 { // 1% errors
			p, err := b.Allow()
			require.NoError(t, err, "dropped at second %d", second)
			if i%100 == 0 {
				p.Reject("occasional error")
			} else {
				p.Accept()
			}
		}
		m.Add(time.Second)
	}
}

func TestBreaker_Allow_dropShareMatchesFormula(t *testing.T) {
	for _, tc := range []struct {
		name                string
		failures, successes int
		k                   float64
		protection          int
	}{
		{name: "all failing", failures: 100, k: 1.5, protection: 5},
		{name: "mostly failing", failures: 100, successes: 20, k: 1.5, protection: 5},
		{name: "half failing, K 1", failures: 50, successes: 50, k: 1, protection: 0},
		{name: "K 2", failures: 200, successes: 50, k: 2, protection: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBreaker(t, breaker.WithPlainFormula(), breaker.WithK(tc.k), breaker.WithProtection(tc.protection))
			// The clock stands still, so the state is exactly what is recorded here.
			recorded := 0
			for recorded < tc.failures+tc.successes {
				p, err := b.Allow()
				if err != nil {
					continue // a drop records nothing: ask again
				}
				if recorded < tc.successes {
					p.Accept()
				} else {
					p.Reject("down")
				}
				recorded++
			}
			accepts, total := breaker.Totals(b)
			require.Equal(t, int64(tc.successes), accepts)
			require.Equal(t, int64(tc.failures+tc.successes), total)

			want := plainRatio(total, accepts, tc.k, float64(tc.protection))
			got := dropShare(b, 20_000)
			// The standard deviation of the share is at most 0.0036 here; 0.02 is over five of them.
			assert.InDelta(t, want, got, 0.02, "drop share for total %d accepts %d", total, accepts)
		})
	}
}

func TestBreaker_Allow_underOverloadShedsThenRecovers(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []breaker.Option
	}{
		{name: "defaults"},
		{name: "plain formula", opts: []breaker.Option{breaker.WithPlainFormula()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, m := newBreaker(t, tc.opts...)
			succeed(t, b, 100)
			m.Add(time.Second)

			// Hard outage: every admitted call fails; 500 calls a second for 12 s.
			for range 120 {
				fail(t, b, 50, "connection refused")
				m.Add(100 * time.Millisecond)
			}
			shed := dropShare(b, 2000)
			assert.Greater(t, shed, 0.9, "a dead dependency is shed")

			// Healed: admitted calls succeed. Within a window the old failures are gone.
			for range 24 {
				succeed(t, b, 50)
				m.Add(100 * time.Millisecond)
			}
			assert.Equal(t, 0.0, dropShare(b, 2000), "a healed dependency is let back in")
		})
	}
}

func TestBreaker_Promise_recordsOutcomes(t *testing.T) {
	b, _ := newBreaker(t)
	succeed(t, b, 3)
	fail(t, b, 2, "timeout")
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(3), accepts)
	assert.Equal(t, int64(5), total)
}

func TestBreaker_Allow_droppedCallsAreNotRecorded(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithProtection(0), breaker.WithK(1))
	fail(t, b, 100, "down")
	_, total := breaker.Totals(b)
	admitted := total
	assert.Greater(t, dropShare(b, 1000), 0.9)
	_, total = breaker.Totals(b)
	assert.Equal(t, admitted, total)
}

func TestBreaker_Allow_dropErrorNamesTheLastReasons(t *testing.T) {
	b, m := newBreaker(t, breaker.WithName("payments"), breaker.WithProtection(0), breaker.WithK(1))
	for i := range 7 {
		p, err := b.Allow()
		for err != nil { // a drop records nothing: ask again
			p, err = b.Allow()
		}
		p.Reject(fmt.Sprintf("reason %d", i))
		m.Add(10 * time.Millisecond)
	}
	var err error
	for err == nil {
		_, err = b.Allow()
	}
	assert.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	assert.Equal(t, `breaker: service unavailable (breaker "payments", last failure "reason 6", 4 earlier)`, err.Error(),
		"one line: the newest reason, and how many more Stats holds")
	s := b.Stats()
	require.Len(t, s.Reasons, 5)
	assert.Equal(t, "reason 2", s.Reasons[4].Text)
}

// Reasons from a hostile upstream must cost a bounded amount of memory and
// time, whatever they hold (issue 11, item 1).
func TestBreaker_Allow_reasonsAreBounded(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithProtection(0), breaker.WithK(1))
	huge := strings.Repeat("é", 1<<20) // 2 MiB, two bytes a rune
	fail(t, b, 50, huge)
	p, err := b.Allow()
	for err != nil { // a drop records nothing: ask again
		p, err = b.Allow()
	}
	p.Reject("ok\x00\x1b[31mred\r\nforged line")
	s := b.Stats()
	require.Len(t, s.Reasons, 5)
	assert.Equal(t, `ok\x00\x1b[31mred\r\nforged line`, s.Reasons[0].Text, "control characters escaped")
	long := s.Reasons[1].Text
	assert.LessOrEqual(t, len(long), 256)
	assert.True(t, utf8.ValidString(long), "cut on a rune boundary")
	assert.True(t, strings.HasSuffix(long, "…"), "and marked as cut")
	for err = nil; err == nil; {
		_, err = b.Allow()
	}
	assert.Less(t, len(err.Error()), 400, "the drop error is one short line")
	assert.NotContains(t, err.Error(), "\n")
}

func TestBreaker_Allow_dropErrorFollowsNewReasons(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithProtection(0), breaker.WithK(1))
	fail(t, b, 50, "first")
	_, err := b.Allow()
	for err == nil {
		_, err = b.Allow()
	}
	assert.Contains(t, err.Error(), `"first"`)
	var again error
	for again == nil {
		_, again = b.Allow()
	}
	assert.True(t, err == again, "while the reasons stay the same, drops share one error value")

	fail(t, b, 50, "line one\nline two")
	for err = nil; err == nil; _, err = b.Allow() {
	}
	assert.Contains(t, err.Error(), `"line one\nline two"`, "reasons are quoted, so the text stays on one line")
}

func TestBreaker_Do_recordsByAcceptable(t *testing.T) {
	errNotFound := errors.New("not found")
	notFoundIsFine := func(err error) bool { return err == nil || errors.Is(err, errNotFound) }
	for _, tc := range []struct {
		name        string
		do          func(b breaker.Breaker, req func() error) error
		reqErr      error
		wantAccepts int64
	}{
		{name: "Do nil", do: func(b breaker.Breaker, r func() error) error { return b.Do(r) }, wantAccepts: 1},
		{name: "Do error", do: func(b breaker.Breaker, r func() error) error { return b.Do(r) }, reqErr: errBoom},
		{name: "DoWithAcceptable acceptable error", reqErr: errNotFound, wantAccepts: 1,
			do: func(b breaker.Breaker, r func() error) error { return b.DoWithAcceptable(r, notFoundIsFine) }},
		{name: "DoWithAcceptable other error", reqErr: errBoom,
			do: func(b breaker.Breaker, r func() error) error { return b.DoWithAcceptable(r, notFoundIsFine) }},
		{name: "DoWithAcceptable nil acceptable", reqErr: errBoom,
			do: func(b breaker.Breaker, r func() error) error { return b.DoWithAcceptable(r, nil) }},
		{name: "DoWithAcceptable rejects nil", wantAccepts: 0,
			do: func(b breaker.Breaker, r func() error) error {
				return b.DoWithAcceptable(r, func(error) bool { return false })
			}},
		{name: "DoWithFallbackAcceptable acceptable error", reqErr: errNotFound, wantAccepts: 1,
			do: func(b breaker.Breaker, r func() error) error {
				return b.DoWithFallbackAcceptable(r, func(error) error { panic("fallback on an admitted call") }, notFoundIsFine)
			}},
		{name: "DoWithFallback error", reqErr: errBoom,
			do: func(b breaker.Breaker, r func() error) error {
				return b.DoWithFallback(r, func(error) error { panic("fallback on an admitted call") })
			}},
		{name: "DoCtx nil", wantAccepts: 1,
			do: func(b breaker.Breaker, r func() error) error { return b.DoCtx(context.Background(), r) }},
		{name: "DoWithAcceptableCtx acceptable error", reqErr: errNotFound, wantAccepts: 1,
			do: func(b breaker.Breaker, r func() error) error {
				return b.DoWithAcceptableCtx(context.Background(), r, notFoundIsFine)
			}},
		{name: "DoWithFallbackCtx error", reqErr: errBoom,
			do: func(b breaker.Breaker, r func() error) error {
				return b.DoWithFallbackCtx(context.Background(), r, func(error) error { panic("fallback on an admitted call") })
			}},
		{name: "DoWithFallbackAcceptableCtx error", reqErr: errBoom,
			do: func(b breaker.Breaker, r func() error) error {
				return b.DoWithFallbackAcceptableCtx(context.Background(), r, func(error) error { panic("fallback on an admitted call") }, notFoundIsFine)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBreaker(t)
			ran := 0
			err := tc.do(b, func() error { ran++; return tc.reqErr })
			assert.Equal(t, 1, ran)
			assertSameError(t, tc.reqErr, err, "the request's error passes through untouched")
			if tc.reqErr == nil {
				assert.NoError(t, err)
			}
			accepts, total := breaker.Totals(b)
			assert.Equal(t, int64(1), total)
			assert.Equal(t, tc.wantAccepts, accepts)
		})
	}
}

// assertSameError checks that got is the very error want, not a copy or a
// wrapper.
func assertSameError(t *testing.T, want, got error, msg string) {
	t.Helper()
	assert.Truef(t, want == got, "want error %#v, got %#v %s", want, got, msg)
}

// dead returns a breaker that drops (almost) every call.
func dead(t *testing.T) breaker.Breaker {
	t.Helper()
	b, _ := newBreaker(t, breaker.WithK(1), breaker.WithProtection(0))
	fail(t, b, 10_000, "down")
	return b
}

func TestBreaker_DoWithFallback_onlyWhenDropped(t *testing.T) {
	b := dead(t)
	_, before := breaker.Totals(b)
	errCached := errors.New("served from cache")
	fallbacks, ran := 0, 0
	for range 1000 {
		err := b.DoWithFallback(func() error { ran++; return errBoom }, func(err error) error {
			fallbacks++
			assert.ErrorIs(t, err, breaker.ErrServiceUnavailable)
			return errCached
		})
		if errors.Is(err, errBoom) {
			continue
		}
		assertSameError(t, errCached, err, "what the fallback returns is returned")
	}
	assert.Equal(t, 1000, fallbacks+ran, "each call either ran or fell back")
	assert.Greater(t, fallbacks, 950, "about 99% are dropped")
	_, after := breaker.Totals(b)
	assert.Equal(t, before+int64(ran), after, "fallbacks record nothing")
}

func TestBreaker_Do_droppedWithoutFallbackReturnsUnavailable(t *testing.T) {
	b := dead(t)
	var err error
	for err == nil || errors.Is(err, errBoom) {
		err = b.Do(func() error { return errBoom })
	}
	assert.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	err = b.DoWithAcceptable(func() error { return nil }, nil)
	for err == nil {
		err = b.DoWithAcceptable(func() error { return nil }, nil)
	}
	assert.ErrorIs(t, err, breaker.ErrServiceUnavailable, "a nil acceptable is the default one")
}

func TestBreaker_Do_panicInRequest(t *testing.T) {
	b, _ := newBreaker(t)
	type custom struct{ code int }
	assert.PanicsWithValue(t, custom{7}, func() {
		_ = b.Do(func() error { panic(custom{7}) })
	})
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "a panic is recorded once, as a failure")

	// The reason of a panic shows in the drop error.
	b, _ = newBreaker(t, breaker.WithK(1), breaker.WithProtection(0))
	assert.Panics(t, func() { _ = b.Do(func() error { panic("disk on fire") }) })
	var err error
	for err == nil {
		_, err = b.Allow()
	}
	assert.Contains(t, err.Error(), `"panic: disk on fire"`)
}

func TestBreaker_Do_panicNil(t *testing.T) {
	b, _ := newBreaker(t)
	defer func() {
		v := recover()
		var pe *runtime.PanicNilError
		assert.ErrorAs(t, v.(error), &pe, "panic(nil) is raised again as itself")
		_, total := breaker.Totals(b)
		assert.Equal(t, int64(1), total)
	}()
	_ = b.Do(func() error { panic(nil) })
}

func TestBreaker_Do_panicInAcceptable(t *testing.T) {
	b, _ := newBreaker(t)
	assert.PanicsWithValue(t, "bad classifier", func() {
		_ = b.DoWithAcceptable(func() error { return errBoom }, func(error) bool { panic("bad classifier") })
	})
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "recorded once, as a failure")
}

func TestBreaker_Do_goexitInRequest(t *testing.T) {
	b, _ := newBreaker(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Do(func() error { runtime.Goexit(); return nil })
		t.Error("Do returned after runtime.Goexit")
	}()
	<-done
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "a call that never returned is a failure")
}

func TestBreaker_Ctx_doneContextRecordsNothing(t *testing.T) {
	b, _ := newBreaker(t)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cancel2()
	never := func() error { t.Error("req ran on a done context"); return nil }
	noFallback := func(error) error { t.Error("fallback ran on a done context"); return nil }
	for _, ctx := range []context.Context{canceled, expired} {
		want := ctx.Err()
		p, err := b.AllowCtx(ctx)
		assert.Nil(t, p)
		assertSameError(t, want, err, "")
		assertSameError(t, want, b.DoCtx(ctx, never), "")
		assertSameError(t, want, b.DoWithAcceptableCtx(ctx, never, nil), "")
		assertSameError(t, want, b.DoWithFallbackCtx(ctx, never, noFallback), "")
		assertSameError(t, want, b.DoWithFallbackAcceptableCtx(ctx, never, noFallback, nil), "")
	}
	_, total := breaker.Totals(b)
	assert.Equal(t, int64(0), total)
}

func TestBreaker_DoCtx_callerCanceledIsNeither(t *testing.T) {
	b, _ := newBreaker(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := b.DoCtx(ctx, func() error {
		cancel() // the caller gives up while the call is in flight
		return fmt.Errorf("read: %w", ctx.Err())
	})
	assert.ErrorIs(t, err, context.Canceled)
	_, total := breaker.Totals(b)
	assert.Equal(t, int64(0), total, "the caller's cancellation is not the dependency's failure")
}

func TestBreaker_DoCtx_canceledByTheDependencyIsAFailure(t *testing.T) {
	b, _ := newBreaker(t)
	err := b.DoCtx(context.Background(), func() error { return context.Canceled })
	assert.ErrorIs(t, err, context.Canceled)
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total, "the caller did not give up: the dependency failed")

	b2, _ := newBreaker(t)
	assert.ErrorIs(t, b2.Do(func() error { return context.Canceled }), context.Canceled)
	_, total = breaker.Totals(b2)
	assert.Equal(t, int64(1), total, "without a context, Canceled is left to acceptable")
}

func TestBreaker_DoCtx_deadlineIsAFailure(t *testing.T) {
	b, _ := newBreaker(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	err := b.DoCtx(ctx, func() error { return context.DeadlineExceeded })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(1), total)
}

func TestBreaker_DoCtx_nilContext(t *testing.T) {
	b, _ := newBreaker(t)
	//lint:ignore SA1012 a nil context on purpose
	assert.NoError(t, b.DoCtx(nil, func() error { return nil }))
	//lint:ignore SA1012 a nil context on purpose
	p, err := b.AllowCtx(nil)
	require.NoError(t, err)
	p.Accept()
	accepts, _ := breaker.Totals(b)
	assert.Equal(t, int64(2), accepts)
}

func TestBreaker_Allow_clockStepsBackwards(t *testing.T) {
	b, m := newBreaker(t)
	m.Add(5 * time.Second)
	succeed(t, b, 10)
	m.Add(-time.Second) // back by less than the window
	succeed(t, b, 10)
	fail(t, b, 3, "down")
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(20), accepts, "nothing recorded is lost")
	assert.Equal(t, int64(23), total)
}

// A clock stepped back by hours would otherwise keep stale failures in the
// window for as long (issue 11, item 6).
func TestBreaker_Allow_clockStepsBackPastTheWindow(t *testing.T) {
	b, m := newBreaker(t)
	fail(t, b, 100, "down")
	m.Set(m.Now().Add(-3 * time.Hour))
	assert.Equal(t, 0.0, dropShare(b, 100), "the breaker starts afresh")
	fail(t, b, 100, "down")
	assert.Positive(t, dropShare(b, 100), "and sheds again on new failures")
}

// A mock clock that reads the zero time when the breaker is made must not
// leave the window empty for good (issue 11, item 6).
func TestBreaker_Allow_zeroTimeAtCreation(t *testing.T) {
	m := clock.NewMock()
	m.Set(time.Time{})
	b := breaker.MustNew(breaker.WithClock(m), breaker.WithProba(proba.NewSeeded(1)))
	m.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	fail(t, b, 1000, "down")
	assert.Greater(t, dropShare(b, 1000), 0.9)
}

func TestBreaker_Allow_clockJumpsCenturies(t *testing.T) {
	b, m := newBreaker(t)
	m.Set(m.Now().AddDate(300, 0, 0)) // past what a time.Duration holds
	fail(t, b, 1000, "down")
	assert.Greater(t, dropShare(b, 1000), 0.9)
}

func TestBreaker_Allow_clockJumpsYears(t *testing.T) {
	b, m := newBreaker(t)
	fail(t, b, 100, "down")
	m.Add(200 * 365 * 24 * time.Hour)
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(0), accepts)
	assert.Equal(t, int64(0), total, "the window empties")
	assert.Equal(t, 0.0, dropShare(b, 100))
}

func TestBreaker_concurrentOutcomesAddUp(t *testing.T) {
	b, m := newBreaker(t, breaker.WithWindow(time.Hour), breaker.WithBuckets(60))
	const goroutines, perGoroutine = 8, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGoroutine {
				if g%2 == 0 {
					_ = b.Do(func() error { return nil })
					continue
				}
				p, err := b.Allow()
				if !assert.NoError(t, err) {
					return
				}
				if i%4 == 0 {
					p.Reject("sometimes")
				} else {
					p.Accept()
				}
			}
		}()
	}
	for range 10 {
		m.Add(time.Second)
	}
	wg.Wait()
	accepts, total := breaker.Totals(b)
	assert.Equal(t, int64(goroutines*perGoroutine), total)
	assert.Equal(t, int64(goroutines*perGoroutine-goroutines/2*perGoroutine/4), accepts)
}

func TestBreaker_hotPathDoesNotAllocate(t *testing.T) {
	b := breaker.MustNew()
	ok := func() error { return nil }
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		p, _ := b.Allow()
		p.Accept()
	}), "Allow + Accept")
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = b.Do(ok) }), "Do")
	ctx := context.Background()
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = b.DoCtx(ctx, ok) }), "DoCtx")
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() {
		if p, err := b.Allow(); err == nil {
			p.Reject("failed")
		}
	}), "Allow + Reject")

	d := dead(t)
	_, _ = d.Allow() // builds the drop error once
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _, _ = d.Allow() }), "a dropped call")
}

func TestNop(t *testing.T) {
	n := breaker.Nop()
	assert.Equal(t, "nop", n.Name())
	for range 100 {
		p, err := n.Allow()
		require.NoError(t, err)
		p.Reject("ignored")
	}
	assertSameError(t, errBoom, n.Do(func() error { return errBoom }), "")
	assertSameError(t, errBoom, n.DoWithAcceptable(func() error { return errBoom }, func(error) bool { panic("called") }), "")
	assertSameError(t, errBoom, n.DoWithFallback(func() error { return errBoom }, func(error) error { panic("called") }), "")
	assertSameError(t, errBoom, n.DoWithFallbackAcceptable(func() error { return errBoom }, noFallback, nil), "")
	ctx := context.Background()
	assert.NoError(t, n.DoCtx(ctx, func() error { return nil }))
	assert.NoError(t, n.DoWithAcceptableCtx(ctx, func() error { return nil }, nil))
	assert.NoError(t, n.DoWithFallbackCtx(ctx, func() error { return nil }, noFallback))
	assert.NoError(t, n.DoWithFallbackAcceptableCtx(ctx, func() error { return nil }, noFallback, nil))
	p, err := n.AllowCtx(ctx)
	assert.NoError(t, err)
	p.Accept()

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, n.DoCtx(canceled, func() error { t.Error("ran"); return nil }), context.Canceled)
	_, err = n.AllowCtx(canceled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.PanicsWithValue(t, "through", func() { _ = n.Do(func() error { panic("through") }) })
}
