package docscheck_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/docscheck"
)

// fixture writes a repository of one module, example.com/m, with the
// given files, and loads it.
func fixture(t *testing.T, files map[string]string) *docscheck.Index {
	t.Helper()
	root := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.22\n"
	for name, text := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	ix, err := docscheck.Load(root)
	require.NoError(t, err)
	return ix
}

const fixtureA = `// Package a has links.
package a

import (
	"fmt"

	"example.com/m/b"
)

// T is a type; see [T.Get], [T.Field], [New], [fmt.Stringer], [b.U.Do],
// [*T] and [io.Reader] (the standard library's, without an import).
type T struct{ Field int }

// Get returns; see [T.Gone].
func (T) Get() {}

// New makes; see [Gone] and [b.Gone], [b.U.Gone] and [fmt.Gone].
func New() { fmt.Println(b.U{}) }

// f is no doc, but its comment still links to [x.Y], an import that is
// not; [i] and a[Gone] are no links.
func f() {}
`

func TestIndex_DocLinks(t *testing.T) {
	ix := fixture(t, map[string]string{
		"a/a.go": fixtureA,
		"b/b.go": "package b\n\n// U is a type.\ntype U struct{}\n\n// Do does.\nfunc (U) Do() {}\n",
	})
	var got []string
	for _, p := range ix.DocLinks() {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		"a/a.go:14: [T.Gone]: package a declares no T.Gone",
		"a/a.go:17: [Gone]: package a declares no Gone",
		"a/a.go:17: [b.Gone]: package b (example.com/m/b) declares no Gone",
		"a/a.go:17: [b.U.Gone]: package b (example.com/m/b) declares no U.Gone",
		"a/a.go:17: [fmt.Gone]: package fmt (fmt) declares no Gone",
		"a/a.go:20: [x.Y]: x is not a package the file's package imports (nor the standard library's)",
	}, got)
}

func TestIndex_CheckName(t *testing.T) {
	ix := fixture(t, map[string]string{
		"a/a.go": fixtureA,
		"b/b.go": "package b\n\n// U is a type.\ntype U struct{}\n\n// Do does.\nfunc (U) Do() {}\n",
	})
	for span, want := range map[string]string{
		"New":                   "",
		"a.New()":               "",
		"b.U.Do":                "",
		"T.Field":               "",
		"x.Get()":               "", // a variable's method
		"*T":                    "",
		"fmt.Println(x)":        "",
		"K":                     "", // capitals alone: no Go name
		"GOWORK":                "",
		"go test ./...":         "",
		"Gone":                  "`Gone` names nothing in the repository's packages",
		"a.Gone(1)":             "`a.Gone(1)`: package a declares no Gone",
		"T.Gone":                "`T.Gone`: no type T of the repository has Gone",
		"fmt.Gone":              "`fmt.Gone`: package fmt declares no Gone",
		"zz.Gone":               "`zz.Gone`: zz is no package the repository knows, and no type of it has Gone",
		"other.Settings":        "",
		"OtherLibsThing":        "",
		"b.U.Gone":              "`b.U.Gone`: package b declares no U.Gone",
		"rollingwindow.AddLane": "`rollingwindow.AddLane`: rollingwindow is no package the repository knows, and no type of it has AddLane",
	} {
		allow := map[string]string{"other.": "another library's", "OtherLibsThing": "another library's"}
		assert.Equal(t, want, ix.CheckName(span, allow), span)
	}
}

func TestMarkdownTokens(t *testing.T) {
	page := "# `Title`\n\nA `span` that\nruns `over\ntwo` lines.\n\n```go\nx := `raw`\n```\n\n| `a` | `b` |\n"
	assert.Equal(t, []docscheck.Token{
		{Pos: "p.md:1", Text: "Title"},
		{Pos: "p.md:3", Text: "span"},
		{Pos: "p.md:4", Text: "over two"},
		{Pos: "p.md:11", Text: "a"},
		{Pos: "p.md:11", Text: "b"},
	}, docscheck.MarkdownTokens("p.md", []byte(page)))
}
