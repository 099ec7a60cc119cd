package breaker_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/override"
)

// shedAll is a valid ShedAll override of ttl.
func shedAll(ttl time.Duration) override.Spec {
	return override.Spec{Mode: override.ShedAll, TTL: ttl, Reason: "db failover", By: "alice"}
}

func TestSetOverride_shedAllDropsEveryLevel(t *testing.T) {
	b, _ := newBreaker(t, breaker.WithName("payments"))
	succeed(t, b, 100)
	require.NoError(t, b.SetOverride(shedAll(time.Minute)))

	_, err := b.Allow()
	require.Error(t, err)
	assert.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	assert.ErrorIs(t, err, breaker.ErrForced)
	for _, text := range []string{`"payments"`, "forced open", `"alice"`, `"db failover"`, "2024-01-01T00:01:00Z"} {
		assert.Contains(t, err.Error(), text)
	}
	for _, c := range []criticality.Level{criticality.CriticalPlus, criticality.Critical,
		criticality.SheddablePlus, criticality.Sheddable} {
		_, err := b.AllowCtx(criticality.With(context.Background(), c))
		assert.ErrorIs(t, err, breaker.ErrForced, c.String())
	}
	ran := false
	err = b.DoWithFallback(func() error { ran = true; return nil }, func(err error) error {
		assert.ErrorIs(t, err, breaker.ErrForced, "the fallback is told why")
		return nil
	})
	assert.NoError(t, err)
	assert.False(t, ran)
	_, err = breaker.Call(context.Background(), b, func(context.Context) (int, error) { return 1, nil })
	assert.ErrorIs(t, err, breaker.ErrForced)

	s := b.Stats()
	require.NotNil(t, s.Override)
	assert.Equal(t, int64(7), s.Override.Drops, "every drop the override made")
	assert.Equal(t, int64(0), s.Drops, "a forced drop says nothing of the dependency: not in the window")
	assert.Equal(t, int64(100), s.Successes)
}

func TestSetOverride_shedNoneAdmitsAndRecords(t *testing.T) {
	b, m := newBreaker(t)
	for range 5 {
		fail(t, b, 100, "refused")
		m.Add(100 * time.Millisecond)
	}
	require.Greater(t, dropShare(b, 1000), 0.5, "the breaker sheds before the override")
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Minute}))

	before := b.Stats()
	assert.Equal(t, 0.0, dropShare(b, 1000))
	_, err := b.AllowCtx(criticality.With(context.Background(), criticality.Sheddable))
	assert.NoError(t, err, "the lowest level too")
	fail(t, b, 10, "still refused")
	succeed(t, b, 20)

	after := b.Stats()
	assert.Equal(t, before.Failures+10, after.Failures, "outcomes are recorded")
	assert.Equal(t, before.Successes+20, after.Successes)
	assert.Greater(t, after.DropProbability, 0.0, "the breaker's own judgement goes on")
	require.NotNil(t, after.Override)
	assert.Equal(t, override.ShedNone, after.Override.Mode)
	assert.Equal(t, int64(0), after.Override.Drops)

	b.ClearOverride()
	assert.Greater(t, dropShare(b, 1000), 0.5, "back to the breaker's own judgement")
}

func TestSetOverride_expiresAtTTL(t *testing.T) {
	l, next := listen(t)
	b, m := newBreaker(t, breaker.WithListener(l))
	start := m.Now()
	require.NoError(t, b.SetOverride(shedAll(10*time.Second)))
	set := next()
	assert.Equal(t, breaker.OverrideSet, set.Kind)

	m.Add(10*time.Second - time.Nanosecond)
	_, err := b.Allow()
	assert.ErrorIs(t, err, breaker.ErrForced, "in force just before SetAt + TTL")
	o, ok := b.Override()
	require.True(t, ok)
	assert.Equal(t, start, o.SetAt)
	assert.Equal(t, start.Add(10*time.Second), o.Expires)
	assert.Equal(t, time.Nanosecond, o.Remaining(m.Now()))

	m.Add(time.Nanosecond)
	_, err = b.Allow()
	assert.NoError(t, err, "gone at SetAt + TTL")
	_, ok = b.Override()
	assert.False(t, ok)
	expired := next()
	assert.Equal(t, breaker.OverrideExpired, expired.Kind)
	assert.Equal(t, start.Add(10*time.Second), expired.At)
	require.NotNil(t, expired.Override)
	assert.Equal(t, "db failover", expired.Override.Reason)
	assert.Equal(t, int64(1), expired.Override.Drops)
}

func TestSetOverride_invalid(t *testing.T) {
	b, _ := newBreaker(t)
	for _, tc := range []struct {
		name string
		o    override.Spec
		want string
	}{
		{"zero TTL", override.Spec{Mode: override.ShedAll}, "TTL 0s"},
		{"negative TTL", override.Spec{Mode: override.ShedAll, TTL: -time.Second}, "TTL -1s"},
		{"longest TTL and a nanosecond", override.Spec{Mode: override.ShedNone, TTL: 24*time.Hour + 1},
			"TTL 24h0m0.000000001s"},
		{"huge TTL", override.Spec{Mode: override.ShedAll, TTL: math.MaxInt64}, "TTL 2562047h47m16.854775807s"},
		{"most negative TTL", override.Spec{Mode: override.ShedAll, TTL: math.MinInt64}, "TTL -2562047h47m16.854775808s"},
		{"no mode", override.Spec{TTL: time.Minute}, "Mode Mode(0)"},
		{"unknown mode", override.Spec{Mode: 7, TTL: time.Minute}, "Mode Mode(7)"},
		{"negative mode", override.Spec{Mode: -1, TTL: time.Minute}, "Mode Mode(-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.SetOverride(tc.o)
			require.ErrorIs(t, err, breaker.ErrInvalidOverride)
			assert.Contains(t, err.Error(), tc.want)
			_, ok := b.Override()
			assert.False(t, ok, "nothing set")
		})
	}
	assert.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: override.MaxTTL}),
		"the longest TTL is valid")
}

func TestSetOverride_nopIsNotOverridable(t *testing.T) {
	b := breaker.Nop()
	err := b.SetOverride(shedAll(time.Minute))
	require.ErrorIs(t, err, breaker.ErrNotOverridable)
	assert.Contains(t, err.Error(), `"nop"`)
	b.ClearOverride() // nothing to clear: does nothing
	_, ok := b.Override()
	assert.False(t, ok)
	assert.ErrorIs(t, b.SetOverride(override.Spec{}), breaker.ErrInvalidOverride,
		"an invalid override is refused first, as by any breaker")
}

func TestSetOverride_everyKindOfBreaker(t *testing.T) {
	r := breaker.MustNewRegistry()
	for name, b := range map[string]breaker.Breaker{
		"MustNew":         breaker.MustNew(),
		"Registry.Get":    r.Get("payments"),
		"DefaultRegistry": breaker.DefaultRegistry().Get("TestSetOverride_everyKindOfBreaker"),
	} {
		require.NoError(t, b.SetOverride(shedAll(time.Minute)), name)
		_, err := b.Allow()
		assert.ErrorIs(t, err, breaker.ErrForced, name)
		b.ClearOverride()
		_, err = b.Allow()
		assert.NoError(t, err, name)
	}
	_, err := r.Get("payments").Allow()
	assert.NoError(t, err, "the registry's breaker is the one cleared")
}

func TestSetOverride_boundsReasonAndBy(t *testing.T) {
	b, _ := newBreaker(t)
	long := strings.Repeat("é", 1000)
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Minute,
		Reason: long, By: "mallory\nlevel=ERROR forged"}))
	o, ok := b.Override()
	require.True(t, ok)
	assert.LessOrEqual(t, len(o.Reason), 256)
	assert.True(t, strings.HasSuffix(o.Reason, "…"), "cut, as failure reasons are")
	assert.Equal(t, `mallory\nlevel=ERROR forged`, o.By, "control characters escaped")
	_, err := b.Allow()
	assert.Less(t, len(err.Error()), 700, "the drop error stays bounded")
	assert.NotContains(t, err.Error(), "\n")
}

func TestSetOverride_replacesTheOld(t *testing.T) {
	b, _ := newBreaker(t)
	require.NoError(t, b.SetOverride(shedAll(time.Minute)))
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Hour, By: "fleet"}))
	o, ok := b.Override()
	require.True(t, ok)
	assert.Equal(t, override.ShedNone, o.Mode)
	assert.Equal(t, "fleet", o.By)
	assert.Equal(t, "", o.Reason)
	_, err := b.Allow()
	assert.NoError(t, err)
}

func TestClearOverride_withoutOneDoesNothing(t *testing.T) {
	l, next := listen(t)
	b, _ := newBreaker(t, breaker.WithListener(l))
	b.ClearOverride()
	require.NoError(t, b.SetOverride(shedAll(time.Minute)))
	b.ClearOverride()
	b.ClearOverride()
	assert.Equal(t, breaker.OverrideSet, next().Kind)
	cleared := next()
	assert.Equal(t, breaker.OverrideCleared, cleared.Kind)
	require.NotNil(t, cleared.Override)
	assert.Equal(t, "alice", cleared.Override.By)
	s := b.Stats()
	assert.Nil(t, s.Override)
}

func TestClearOverride_afterItsTimeTellsExpired(t *testing.T) {
	l, next := listen(t)
	b, m := newBreaker(t, breaker.WithListener(l))
	require.NoError(t, b.SetOverride(shedAll(time.Minute)))
	m.Add(2 * time.Minute)
	b.ClearOverride()
	assert.Equal(t, breaker.OverrideSet, next().Kind)
	assert.Equal(t, breaker.OverrideExpired, next().Kind)
}

func TestSetOverride_clockSteppedBack(t *testing.T) {
	t.Run("by less than the window: stands still", func(t *testing.T) {
		b, m := newBreaker(t)
		require.NoError(t, b.SetOverride(shedAll(10*time.Second)))
		m.Add(-breaker.DefaultWindow / 2)
		_, err := b.Allow()
		assert.ErrorIs(t, err, breaker.ErrForced)
		m.Add(breaker.DefaultWindow/2 + 10*time.Second)
		_, err = b.Allow()
		assert.NoError(t, err, "ends at SetAt + TTL all the same")
	})
	t.Run("by more than the window: ends", func(t *testing.T) {
		l, next := listen(t)
		b, m := newBreaker(t, breaker.WithListener(l))
		require.NoError(t, b.SetOverride(shedAll(10*time.Second)))
		m.Add(-365 * 24 * time.Hour)
		_, err := b.Allow()
		assert.NoError(t, err, "a clock a year back must not hold the override for a year")
		_, ok := b.Override()
		assert.False(t, ok)
		assert.Equal(t, breaker.OverrideSet, next().Kind)
		assert.Equal(t, breaker.OverrideExpired, next().Kind)
	})
}

func TestSetOverride_listenerPanics(t *testing.T) {
	l, next := listen(t)
	b, _ := newBreaker(t, breaker.WithListener(func(e breaker.Event) { panic("listener bug") }),
		breaker.WithListener(l))
	require.NotPanics(t, func() { require.NoError(t, b.SetOverride(shedAll(time.Minute))) })
	assert.Equal(t, breaker.OverrideSet, next().Kind, "the next listener is told all the same")
	require.NotPanics(t, func() { b.ClearOverride() })
	assert.Equal(t, breaker.OverrideCleared, next().Kind)
}

func TestSetOverride_eventsKeepShedding(t *testing.T) {
	l, next := listen(t)
	b, m := newBreaker(t, breaker.WithListener(l))
	for range 10 {
		fail(t, b, 100, "refused")
		m.Add(100 * time.Millisecond)
	}
	started := next()
	require.Equal(t, breaker.SheddingChanged, started.Kind)
	require.True(t, started.Shedding)
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Minute}))
	set := next()
	assert.Equal(t, breaker.OverrideSet, set.Kind)
	assert.True(t, set.Shedding, "an override event repeats the shedding state, never a change")
}

func TestWithLogger_override(t *testing.T) {
	var buf safeBuffer
	b, m := newBreaker(t, breaker.WithName("payments"),
		breaker.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	require.NoError(t, b.SetOverride(shedAll(time.Minute)))
	b.ClearOverride()
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Second}))
	m.Add(time.Second)
	_, _ = b.Override()
	out := buf.String()
	assert.Contains(t, out, `level=WARN msg="breaker override set" breaker=payments mode=shed_all reason="db failover" by=alice`)
	assert.Contains(t, out, `level=INFO msg="breaker override cleared" breaker=payments mode=shed_all`)
	assert.Contains(t, out, `level=INFO msg="breaker override expired" breaker=payments mode=shed_none`)
	assert.NotContains(t, out, "shedding", "no change of shedding is logged")
}

func TestEventKind_String(t *testing.T) {
	for want, k := range map[string]breaker.EventKind{"shedding_changed": breaker.SheddingChanged,
		"override_set": breaker.OverrideSet, "override_cleared": breaker.OverrideCleared,
		"override_expired": breaker.OverrideExpired, "overload_changed": breaker.OverloadChanged,
		"EventKind(9)": 9} {
		assert.Equal(t, want, k.String())
	}
}

func TestSetOverride_forcedDropAllocatesNothing(t *testing.T) {
	b := breaker.MustNew() // the system clock, as in production
	require.NoError(t, b.SetOverride(shedAll(time.Hour)))
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _, _ = b.Allow() }), "a forced drop")
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Hour}))
	ok := func() error { return nil }
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { _ = b.Do(ok) }), "a forced pass")
}

// TestSetOverride_racesWithCallsAndClear sets and clears overrides from
// two goroutines while eight make calls and the clock moves.
func TestSetOverride_racesWithCallsAndClear(t *testing.T) {
	b, m := newBreaker(t)
	var callers, setters sync.WaitGroup
	stop := make(chan struct{})
	var mu sync.Mutex
	var recorded int64
	for g := range 8 {
		callers.Add(1)
		go func() {
			defer callers.Done()
			var n int64
			defer func() { mu.Lock(); recorded += n; mu.Unlock() }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p, err := b.Allow()
				if err != nil {
					continue
				}
				n++
				if (i+g)%3 == 0 {
					p.Reject("refused")
				} else {
					p.Accept()
				}
			}
		}()
	}
	for g := range 2 {
		setters.Add(1)
		go func() {
			defer setters.Done()
			for i := range 2000 {
				switch (i + g) % 3 {
				case 0:
					assert.NoError(t, b.SetOverride(shedAll(time.Minute)))
				case 1:
					assert.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Second}))
				default:
					b.ClearOverride()
				}
				_, _ = b.Override()
			}
		}()
	}
	for range 20 {
		m.Add(100 * time.Millisecond)
		_ = b.Stats()
	}
	setters.Wait()
	b.ClearOverride()
	close(stop)
	callers.Wait()

	_, ok := b.Override()
	assert.False(t, ok, "no override left behind")
	m.Add(breaker.DefaultWindow) // every call back and counted
	s := b.Stats()
	assert.Nil(t, s.Override)
	assert.Greater(t, recorded, int64(0))
	assert.Equal(t, recorded, s.TotalSuccesses+s.TotalFailures, "every admitted call recorded once")
}

func TestRegistry_SetLimit_keepsAnOverriddenBreaker(t *testing.T) {
	m := newMock()
	r := breaker.MustNewRegistry(breaker.WithClock(m))
	r.SetLimit(10)
	held := breaker.Keyed(r, "held")
	require.NoError(t, held.SetOverride(override.Spec{Mode: override.ShedNone, TTL: time.Minute}))
	for i := range 100 {
		breaker.Keyed(r, fmt.Sprint("host-", i))
	}
	assert.Contains(t, names(r), "held", "forgetting it would forget its override")
	assert.True(t, held == breaker.Keyed(r, "held"), "the same breaker")
	_, ok := breaker.Keyed(r, "held").Override()
	assert.True(t, ok)

	m.Add(time.Minute) // the override ends: the breaker may go like any other
	for i := range 100 {
		breaker.Keyed(r, fmt.Sprint("later-", i))
	}
	assert.NotContains(t, names(r), "held")
}

func TestSetOverride_listenerMayCallBack(t *testing.T) {
	var b breaker.Breaker
	var kinds []breaker.EventKind
	l := func(e breaker.Event) {
		kinds = append(kinds, e.Kind)
		if e.Kind == breaker.OverrideSet { // would deadlock if listeners ran under the override's lock
			_, _ = b.Override()
			_ = b.Stats()
			b.ClearOverride()
		}
	}
	b, _ = newBreaker(t, breaker.WithListener(l))
	require.NoError(t, b.SetOverride(shedAll(time.Minute)))
	assert.Equal(t, []breaker.EventKind{breaker.OverrideSet, breaker.OverrideCleared}, kinds)
	_, ok := b.Override()
	assert.False(t, ok, "the listener cleared it")
}
