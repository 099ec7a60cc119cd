package docsample

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const page = "# A page\n\n<!-- sample: greeting -->\n```text\nhello\n```\n\nAfter.\n"

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.md")
	require.NoError(t, os.WriteFile(path, []byte(page), 0o644))

	Check(t, path, "greeting", "hello", false)

	rec := &recorder{TB: t}
	Check(rec, path, "greeting", "hello, world\n", false)
	assert.True(t, rec.failed, "a different text fails")

	Check(t, path, "greeting", "hello, world\nagain\n", true)
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# A page\n\n<!-- sample: greeting -->\n```text\nhello, world\nagain\n```\n\nAfter.\n", string(src))
}

func TestBlock_errors(t *testing.T) {
	for _, tc := range []struct{ name, page, want string }{
		{"no marker", "```text\nx\n```\n", "no line"},
		{"no block below", "<!-- sample: greeting -->\ntext\n", "no fenced block"},
		{"twice", page + page, "two lines"},
		{"never closed", "<!-- sample: greeting -->\n````text\nx\n```\n", "never closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := block(tc.page, "greeting")
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// recorder records a failure instead of failing the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}
