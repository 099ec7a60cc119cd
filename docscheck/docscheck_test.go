package docscheck_test

import (
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/docscheck"
)

func TestExtract(t *testing.T) {
	page := "# Title\n\n" +
		"```go\nx := 1\n```\n\n" +
		"1. A step:\n\n" +
		"   ```sh\n   make test\n     indented\n   ```\n\n" +
		"````text\n```\n````\n\n" +
		"```\nplain\n```\n"
	blocks, err := docscheck.Extract("p.md", []byte(page))
	require.NoError(t, err)
	assert.Equal(t, []docscheck.Block{
		{File: "p.md", Line: 4, Lang: "go", Text: "x := 1\n"},
		{File: "p.md", Line: 10, Lang: "sh", Text: "make test\n  indented\n"},
		{File: "p.md", Line: 15, Lang: "text", Text: "```\n"},
		{File: "p.md", Line: 19, Lang: "", Text: "plain\n"},
	}, blocks)
}

func TestExtract_unclosedFence(t *testing.T) {
	_, err := docscheck.Extract("p.md", []byte("text\n```go\nx := 1\n"))
	assert.ErrorContains(t, err, "p.md: the block opened on line 2 is never closed")
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       docscheck.Kind
	}{
		{"file", "package main\n\nfunc main() {}\n", docscheck.File},
		{"statements", "b := breaker.MustNew()\nif err != nil {\n\treturn err\n}\n", docscheck.Statements},
		{"declarations", "func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {}\n", docscheck.Declarations},
		{"shell", "go run ./examples/simulate -quiet\n", docscheck.NotGo},
		{"formula", "max(0, (total − protection − K·accepts) / (total + 1))\n", docscheck.NotGo},
		{"broken", "b := breaker.MustNew(\n", docscheck.NotGo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := docscheck.Classify(tc.text)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLooksLikeGo(t *testing.T) {
	assert.True(t, docscheck.LooksLikeGo("err := b.Do(f)\n"))
	assert.False(t, docscheck.LooksLikeGo("make test   # the tests\n"))
	assert.False(t, docscheck.LooksLikeGo("\n"))
}

// Every package of docscheck.Imports is imported by imports.go, so that
// go.mod requires its module, and nothing else is.
func TestImports_areRequired(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "imports.go", nil, parser.ImportsOnly)
	require.NoError(t, err)
	var imported []string
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		require.NoError(t, err)
		imported = append(imported, path)
	}
	var table []string
	for _, path := range docscheck.Imports {
		table = append(table, path)
	}
	assert.ElementsMatch(t, table, imported)
}
