package override_test

import (
	"flag"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/docsample"
	"github.com/srebreaker/srebreaker/override"
)

var update = flag.Bool("update", false, "rewrite the guide's samples from what the code prints")

// The error text of a call that docs/guide/overrides.md shows is the one a
// ShedAll override gives.
func TestSample_forcedOpenError(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(mock))
	require.NoError(t, b.SetOverride(override.Spec{Mode: override.ShedAll, TTL: 10 * time.Minute,
		Reason: "database failover, INC-1234", By: "alice"}))
	err := b.Do(func() error { return nil })
	require.ErrorIs(t, err, breaker.ErrForced)
	docsample.Check(t, "../docs/guide/overrides.md", "override-error", err.Error(), *update)
}
