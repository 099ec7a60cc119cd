package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// update rewrites docs/pictures from the generators: make pictures.
var update = flag.Bool("update", false, "rewrite the pictures under docs/pictures")

// TestPictures fails when a picture under docs/pictures is not what its
// generator draws, so that a change of the breaker, of retry or of the
// drawing shows in the pictures the same day.
func TestPictures(t *testing.T) {
	for _, pic := range pictures {
		t.Run(pic.file, func(t *testing.T) {
			got := drawPicture(pic.draw)
			parseSVG(t, got)
			assert.Less(t, len(got), 300<<10, "a picture of a few hundred KB at most")
			path := filepath.Join("..", "..", "docs", "pictures", pic.file)
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "make pictures writes it")
			assert.True(t, bytes.Equal(want, got), "%s is not what its generator draws: make pictures", path)
		})
	}
}

// The figures docs/guide/retries.md quotes: naive retries triple the load on a
// failing dependency, the budget holds it near 1.1×, and the breaker
// shedding too leaves a few hundredths of it.
func TestRetryRun_amplification(t *testing.T) {
	want := map[string]struct{ amp, delta float64 }{
		"naive": {3, 0.05}, "budget": {1.1, 0.05}, "breaker": {0.02, 0.02},
	}
	for _, rs := range retrySetups {
		_, amp := retryRun(rs.policy, rs.breaker, rs.shedding)
		assert.InDelta(t, want[rs.id].amp, amp, want[rs.id].delta, rs.id)
	}
}

// What docs/design/algorithm.md says of the drop curve: the plain formula settles
// at 1 − K·s, and each breaker starts shedding a little above 1/K.
func TestSteadyDropShare(t *testing.T) {
	plain := []breaker.Option{breaker.WithPlainFormula()}
	assert.InDelta(t, 1-breaker.DefaultK*0.3, steadyDropShare(plain, 0.3, 1), 0.05, "plain at 30 %")
	assert.Less(t, steadyDropShare(plain, 0.75, 1), 0.01, "plain above 1/K")
	assert.Greater(t, steadyDropShare(nil, 0.6, 1), 0.3, "default below 1/K")
	assert.Less(t, steadyDropShare(nil, 0.75, 1), 0.01, "default above 1/K")
	assert.Less(t, steadyDropShare([]breaker.Option{breaker.WithK(2)}, 0.6, 1), 0.01, "K = 2 above 1/K")
}
