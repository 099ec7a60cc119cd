package docscheck_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/docscheck"
)

// workspace returns the repository's workspace, or skips the test when the
// repository's go.work is missing (GOWORK=off does not matter: the
// generated module is given a go.work of its own).
func workspace(t *testing.T) docscheck.Workspace {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	work := filepath.Join(root, "go.work")
	if _, err := os.Stat(work); errors.Is(err, fs.ErrNotExist) {
		t.Skip("no go.work above the module: not in its repository")
	}
	module, err := filepath.Abs(".")
	require.NoError(t, err)
	return docscheck.Workspace{Root: root, GoWork: work, Module: module, TempDir: t.TempDir()}
}

// pages returns README.md and the Markdown pages under docs/, relative to
// root, with their text.
func pages(t *testing.T, root string) map[string][]byte {
	t.Helper()
	texts := map[string][]byte{}
	add := func(p string) {
		src, err := os.ReadFile(p)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		texts[filepath.ToSlash(rel)] = src
	}
	add(filepath.Join(root, "README.md"))
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			add(p)
		}
		return err
	}))
	return texts
}

// markdown returns the blocks of README.md and the pages under docs/.
func markdown(t *testing.T, root string) []docscheck.Block {
	t.Helper()
	texts := pages(t, root)
	names := make([]string, 0, len(texts))
	for name := range texts {
		names = append(names, name)
	}
	sort.Strings(names)
	var blocks []docscheck.Block
	for _, rel := range names {
		bs, err := docscheck.Extract(rel, texts[rel])
		require.NoError(t, err)
		blocks = append(blocks, bs...)
	}
	return blocks
}

// Every go block of README.md and docs/ compiles and passes go vet.
func TestDocs_everyGoBlockCompiles(t *testing.T) {
	w := workspace(t)
	blocks := markdown(t, w.Root)
	goBlocks := 0
	for _, b := range blocks {
		if b.Lang == "go" {
			goBlocks++
		}
	}
	require.Positive(t, goBlocks, "README.md and docs/ hold go blocks")
	t.Logf("%d blocks, %d of them go", len(blocks), goBlocks)
	require.NoError(t, docscheck.Compile(context.Background(), w, blocks))
}

// A block that stops compiling fails the check, and the message names the
// Markdown file and line.
func TestCompile_failsOnABlockThatDoesNotCompile(t *testing.T) {
	w := workspace(t)
	page := "```go\n" +
		"b := breaker.MustNew(breaker.WithName(\"payments\"))\n" +
		"```\n\n" +
		"```go\n" +
		"b := breaker.MustNew(breaker.WithNam(\"payments\")) // a typo\n" +
		"```\n"
	blocks, err := docscheck.Extract("docs/broken.md", []byte(page))
	require.NoError(t, err)
	err = docscheck.Compile(context.Background(), w, blocks)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "docs/broken.md:6:")
	assert.Contains(t, err.Error(), "WithNam")
	assert.NotContains(t, err.Error(), "docs/broken.md:2:", "the block that compiles is not blamed")
}
