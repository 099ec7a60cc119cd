package criticality_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/criticality"
)

type otherKey struct{}

func TestWith_isFoundUnderOtherContexts(t *testing.T) {
	ctx := criticality.With(context.Background(), criticality.SheddablePlus)
	ctx = context.WithValue(ctx, otherKey{}, "v")
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	assert.Equal(t, criticality.SheddablePlus, criticality.From(ctx))
	assert.Equal(t, "v", ctx.Value(otherKey{}))
}

func TestWith_answersOtherKeysFromItsParent(t *testing.T) {
	parent := context.WithValue(context.Background(), otherKey{}, "v")
	ctx := criticality.With(parent, criticality.Sheddable)
	assert.Equal(t, "v", ctx.Value(otherKey{}))
	assert.Nil(t, ctx.Value("absent"))
}

func TestWith_keepsItsParentsCancellation(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.Background())
	ctx := criticality.With(parent, criticality.Sheddable)
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	deadline, ok := ctx.Deadline()
	assert.False(t, ok)
	assert.True(t, deadline.IsZero())
	assert.NoError(t, ctx.Err())

	why := errors.New("shutting down")
	cancel(why)
	<-ctx.Done()
	<-child.Done()
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.ErrorIs(t, child.Err(), context.Canceled)
	assert.Equal(t, why, context.Cause(ctx))
	assert.Equal(t, why, context.Cause(child), "the cause reaches through the level")
}

func TestWith_deadlineIsItsParents(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	parent, cancel := context.WithDeadline(context.Background(), at)
	defer cancel()
	deadline, ok := criticality.With(parent, criticality.Critical).Deadline()
	assert.True(t, ok)
	assert.Equal(t, at, deadline)
}

func TestWith_string(t *testing.T) {
	ctx := criticality.With(context.Background(), criticality.Sheddable)
	assert.Equal(t, "context.Background.WithValue(criticality, SHEDDABLE)", fmt.Sprint(ctx))
}

// A context made under a level is cancelled by the level's parent
// directly, as under context.WithValue: context.WithCancel starts a
// goroutine per child only for a parent whose Done it cannot trace.
func TestWith_childrenNeedNoGoroutine(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := criticality.With(parent, criticality.Sheddable)
	before := runtime.NumGoroutine()
	const children = 100
	cancels := make([]context.CancelFunc, children)
	for i := range cancels {
		_, cancels[i] = context.WithCancel(ctx)
	}
	assert.Less(t, runtime.NumGoroutine()-before, children/2)
	for _, c := range cancels {
		c()
	}
}

func TestWith_errFollowsItsParent(t *testing.T) {
	for _, parent := range []context.Context{context.Background(), context.TODO()} {
		ctx := criticality.With(parent, criticality.Sheddable)
		assert.NoError(t, ctx.Err())
		assert.Nil(t, ctx.Done())
		assert.NoError(t, criticality.With(ctx, criticality.CriticalPlus).Err(), "a level over a level")
	}
	parent, cancel := context.WithCancel(context.Background())
	ctx := criticality.With(parent, criticality.Sheddable)
	over := criticality.With(ctx, criticality.CriticalPlus)
	under := criticality.With(context.WithValue(context.Background(), otherKey{}, "v"), criticality.Sheddable)
	assert.NoError(t, ctx.Err())
	assert.NoError(t, under.Err())
	cancel()
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.ErrorIs(t, over.Err(), context.Canceled, "a level over a level over a canceled context")
}
