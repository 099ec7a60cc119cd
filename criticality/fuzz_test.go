package criticality_test

import (
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/criticality"
)

// levels are the four levels, highest first.
var levels = []criticality.Level{criticality.CriticalPlus, criticality.Critical,
	criticality.SheddablePlus, criticality.Sheddable}

// maxParseError is the longest error Parse returns: its text and the 32
// bytes of the input it quotes, each of which %q may write as \xNN, and
// the ellipsis.
const maxParseError = 100 + 4*32 + len(`…`)

// FuzzParse reads what a header or metadata value may carry. Its seed corpus
// is in testdata/fuzz; go test runs it, make fuzz explores from it.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		c, err := criticality.Parse(s)
		again, againErr := criticality.Parse(s)
		require.Equal(t, c, again, "a second read")
		require.Equal(t, err, againErr, "a second read")
		if err != nil {
			require.Equal(t, criticality.Default, c, "%q", s)
			require.LessOrEqual(t, len(err.Error()), maxParseError, "the error quotes at most 32 bytes of the input")
			require.True(t, utf8.ValidString(err.Error()), "%q", err)
			for _, l := range levels {
				require.False(t, asciiEqualFold(s, l.String()), "%q names %v", s, l)
			}
			return
		}
		require.True(t, c.Valid(), "%q read as %v", s, c)
		require.True(t, asciiEqualFold(s, c.String()), "%q read as %v: only a name, in any ASCII case, is a level", s, c)
		back, err := criticality.Parse(c.String())
		require.NoError(t, err, "what String writes reads back")
		require.Equal(t, c, back)
	})
}

// asciiEqualFold is the model of a name in any case: ASCII letters only,
// unlike strings.EqualFold.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	upper := func(c byte) byte {
		if 'a' <= c && c <= 'z' {
			return c - ('a' - 'A')
		}
		return c
	}
	for i := range len(a) {
		if upper(a[i]) != upper(b[i]) {
			return false
		}
	}
	return true
}

// TestParse_hugeInput: a megabyte to parse costs a bounded amount of
// memory, the error quoting 32 bytes of it.
func TestParse_hugeInput(t *testing.T) {
	huge := strings.Repeat("SHEDDABLE", 1<<17)
	_, err := criticality.Parse(huge)
	require.Error(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		_, _ = criticality.Parse(huge)
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, (after.TotalAlloc-before.TotalAlloc)/10, uint64(1024))
}

// TestParse_nonASCIILetterIsNoLevel: Parse folded case as Unicode does, and
// so read "ſheddable" (a long s, U+017F) as SHEDDABLE.
func TestParse_nonASCIILetterIsNoLevel(t *testing.T) {
	for _, s := range []string{"ſheddable", "ſHEDDABLE_PLUS", "CRİTICAL", "crıtical"} {
		c, err := criticality.Parse(s)
		assert.Error(t, err, "%q", s)
		assert.Equal(t, criticality.Default, c, "%q", s)
	}
	c, err := criticality.Parse("sheddable_Plus")
	assert.NoError(t, err)
	assert.Equal(t, criticality.SheddablePlus, c)
}
