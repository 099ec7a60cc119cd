package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			assert.Equal(t, got, drawPicture(pic.draw), "the same picture every time")
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
