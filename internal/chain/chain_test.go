package chain_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/chain"
)

type name string

func (n name) Name() string { return string(n) }

type otherKey struct{}

func TestFailed_outsideAServedRequest(t *testing.T) {
	ctx := context.WithValue(context.Background(), otherKey{}, 1)
	chain.Failed(ctx, name("inventory")) // nothing to note, and no panic
	var none context.Context             // a breaker's methods without a context pass none
	chain.Failed(none, name("inventory"))
	assert.Nil(t, chain.From(ctx))
	_, ok := (*chain.Mark)(nil).Down()
	assert.False(t, ok)
}

func TestFailed_keepsTheFirst(t *testing.T) {
	ctx, m := chain.With(context.Background(), criticality.Default)
	_, ok := m.Down()
	assert.False(t, ok, "a new Mark holds none")

	inner := context.WithValue(ctx, otherKey{}, 1) // a call's context, derived from the request's
	chain.Failed(inner, name("inventory"))
	chain.Failed(inner, name("pricing"))

	got, ok := m.Down()
	assert.True(t, ok)
	assert.Equal(t, "inventory", got)
	assert.Same(t, m, chain.From(inner))
	assert.Equal(t, 1, inner.Value(otherKey{}), "other values pass through")
}

func TestWith_hidesAnOuterMark(t *testing.T) {
	outer, om := chain.With(context.Background(), criticality.Default)
	inner, im := chain.With(outer, criticality.Default)
	chain.Failed(inner, name("db"))
	_, ok := om.Down()
	assert.False(t, ok, "the inner server answers for its handler's calls")
	_, ok = im.Down()
	assert.True(t, ok)
}

func TestWith_keepsCancellation(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, _ := chain.With(parent, criticality.Default)
	child, stop := context.WithCancel(ctx)
	defer stop()
	cancel()
	<-child.Done()
	assert.ErrorIs(t, child.Err(), context.Canceled)
}

func TestFailed_concurrent(t *testing.T) {
	ctx, m := chain.With(context.Background(), criticality.Default)
	var wg sync.WaitGroup
	for _, n := range []name{"a", "b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chain.Failed(ctx, n)
		}()
	}
	wg.Wait()
	got, ok := m.Down()
	assert.True(t, ok)
	assert.Contains(t, []string{"a", "b", "c", "d"}, got)
}

var sinkCtx context.Context

// BenchmarkFailed is what a client integration pays on a failure's path,
// outside a served request and inside one: one context lookup, through
// the values a handler's context typically holds. A success pays nothing.
func BenchmarkFailed(b *testing.B) {
	base := context.Background()
	for range 4 { // a server's and a tracer's values
		base = context.WithValue(base, otherKey{}, 1)
	}
	inside, _ := chain.With(base, criticality.Default)
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{
		{"outside", context.WithValue(base, otherKey{}, 2)},
		{"inside", context.WithValue(inside, otherKey{}, 2)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				chain.Failed(bc.ctx, name("inventory"))
			}
		})
	}
}

// BenchmarkWith is what a server pays per request it serves: one
// allocation.
func BenchmarkWith(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		sinkCtx, _ = chain.With(ctx, criticality.Default)
	}
}

func TestLeave_withoutARoom(t *testing.T) {
	ctx, _ := chain.With(context.Background(), criticality.Default)
	assert.Nil(t, chain.Leave(ctx), "a request no overload limit let in holds no room")
	assert.Nil(t, chain.Leave(context.Background()))
	chain.Leave(ctx).Return() // does nothing
}

// The context With makes carries the level the request is served at, in
// the same allocation as its Mark; at the default level it carries
// nothing of its own, and what its parent carries shows through.
func TestWith_carriesTheLevel(t *testing.T) {
	ctx, _ := chain.With(context.Background(), criticality.Sheddable)
	assert.Equal(t, criticality.Sheddable, criticality.From(ctx))
	ctx, _ = chain.With(context.Background(), criticality.Default)
	assert.Equal(t, criticality.Default, criticality.From(ctx))

	outer := criticality.With(context.Background(), criticality.CriticalPlus)
	ctx, _ = chain.With(outer, criticality.Default)
	assert.Equal(t, criticality.CriticalPlus, criticality.From(ctx), "the parent's level shows through")
	ctx, _ = chain.With(outer, criticality.SheddablePlus)
	assert.Equal(t, criticality.SheddablePlus, criticality.From(ctx), "the level served, over the parent's")
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { ctx, _ = chain.With(outer, criticality.Sheddable) }))
}
