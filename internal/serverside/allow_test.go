package serverside

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/drophook"
	"github.com/srebreaker/srebreaker/override"
)

// levelCounts returns the lifetime successes and drops of level c in st.
func levelCounts(st breaker.Stats, c criticality.Level) (successes, drops int64) {
	for _, l := range st.Criticalities {
		if l.Level == c {
			return l.TotalSuccesses, l.TotalDrops
		}
	}
	return 0, 0
}

// AllowAt asks one of package breaker's breakers at the level it is
// given, with no context that carries it and no allocation: the call
// counts at that level, as through AllowCtx with the level in its
// context.
func TestAllowAt_asksAtTheLevelGiven(t *testing.T) {
	b := breaker.MustNew(breaker.WithClock(clock.NewMock()))
	ctx := context.Background()
	p, err := AllowAt(b, ctx, criticality.Sheddable)
	require.NoError(t, err)
	p.Accept()
	got, _ := levelCounts(b.Stats(), criticality.Sheddable)
	assert.Equal(t, int64(1), got, "counted at SHEDDABLE")
	got, _ = levelCounts(b.Stats(), criticality.Default)
	assert.Equal(t, int64(0), got, "not at the default")

	p, err = b.AllowCtx(criticality.With(ctx, criticality.Sheddable))
	require.NoError(t, err)
	p.Accept()
	got, _ = levelCounts(b.Stats(), criticality.Sheddable)
	assert.Equal(t, int64(2), got, "AllowCtx with the level counts the same")

	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() {
		p, _ := AllowAt(b, ctx, criticality.Sheddable)
		p.Accept()
	}))
}

// A drop through AllowAt tells the drop hook the level it was asked at,
// and a context already done is answered with its error, as AllowCtx
// does.
func TestAllowAt_dropsAtTheLevelAndHeedsTheContext(t *testing.T) {
	b := breaker.MustNew(breaker.WithClock(clock.NewMock()))
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: time.Minute}))
	var drops []drophook.Drop
	defer drophook.Set(func(_ context.Context, d drophook.Drop) { drops = append(drops, d) })()
	_, err := AllowAt(b, context.Background(), criticality.SheddablePlus)
	require.ErrorIs(t, err, breaker.ErrServiceUnavailable)
	require.Len(t, drops, 1)
	assert.Equal(t, criticality.SheddablePlus, drops[0].Criticality)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = AllowAt(b, ctx, criticality.SheddablePlus)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, drops, 1, "a call whose caller has gone is no drop")
}

// levelSeen is a Breaker that is none of package breaker's own: it
// notes the level of the context it is asked with.
type levelSeen struct {
	breaker.Breaker
	seen criticality.Level
}

func (l *levelSeen) AllowCtx(ctx context.Context) (srebreaker.Promise, error) {
	l.seen = criticality.From(ctx)
	return l.Breaker.AllowCtx(ctx)
}

// A Breaker of another kind is asked through AllowCtx, with the level in
// a context made for it.
func TestAllowAt_asksAnotherBreakerWithTheLevelInItsContext(t *testing.T) {
	b := &levelSeen{Breaker: breaker.MustNew(breaker.WithClock(clock.NewMock()))}
	p, err := AllowAt(b, context.Background(), criticality.CriticalPlus)
	require.NoError(t, err)
	p.Accept()
	assert.Equal(t, criticality.CriticalPlus, b.seen)
	if got, _ := levelCounts(b.Stats(), criticality.CriticalPlus); got != 1 {
		t.Errorf("counted %d at CRITICAL_PLUS, want 1", got)
	}
}
