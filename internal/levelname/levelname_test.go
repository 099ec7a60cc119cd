package levelname

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIndex(t *testing.T) {
	for i, name := range Names {
		got, ok := Index(name)
		assert.True(t, ok, name)
		assert.Equal(t, i, got, name)
	}
	got, ok := Index("critical_Plus")
	assert.True(t, ok)
	assert.Equal(t, 3, got)
	for _, s := range []string{"", "CRITICAL ", "URGENT", "ſHEDDABLE", "CRITICAL\x00"} {
		_, ok := Index(s)
		assert.False(t, ok, "%q", s)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = Index("no level at all, and a long value too") }))
}
