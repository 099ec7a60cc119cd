package docscheck_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/docscheck"
)

// guidePages returns the pages under docs/guide, relative to the
// repository, sorted, with their text.
func guidePages(t *testing.T, root string) ([]string, map[string][]byte) {
	t.Helper()
	texts := pages(t, root)
	var names []string
	for name := range texts {
		if strings.HasPrefix(name, "docs/guide/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	require.NotEmpty(t, names, "pages under docs/guide")
	return names, texts
}

// linkedFrom returns the pages that the links of a text reach, relative to
// the repository; file is the text's own path.
func linkedFrom(file string, src []byte) map[string]bool {
	linked := map[string]bool{}
	for _, l := range docscheck.Links(file, src) {
		target, _, _ := strings.Cut(l.Target, "#")
		if target != "" && !strings.Contains(target, ":") {
			linked[path.Join(path.Dir(file), target)] = true
		}
	}
	return linked
}

// Every page of the guide is reachable from the map of the docs,
// docs/README.md, and from the README's guide table: a page linked from
// nowhere is a page nobody reads.
func TestGuide_everyPageLinked(t *testing.T) {
	root := workspace(t).Root
	names, texts := guidePages(t, root)
	fromMap := linkedFrom("docs/README.md", texts["docs/README.md"])
	fromTable := linkedFrom("README.md", []byte(section(t, string(texts["README.md"]), "## Guide")))
	for _, name := range names {
		assert.True(t, fromMap[name], "docs/README.md links %s", name)
		assert.True(t, fromTable[name], "README.md's guide table links %s", name)
	}
}

// No page of the guide holds the maintainers' material that
// docscheck.MaintainersMaterial lists; the design notes may.
func TestGuide_noMaintainersMaterial(t *testing.T) {
	root := workspace(t).Root
	names, texts := guidePages(t, root)
	var found []string
	for _, name := range names {
		for _, p := range docscheck.Maintainers(name, texts[name]) {
			found = append(found, p.String())
		}
	}
	if len(found) > 0 {
		t.Errorf("maintainers' material in the guide (move it to a design page, or say it for a user):\n%s", strings.Join(found, "\n"))
	}
}

func TestMaintainers(t *testing.T) {
	page := "# A page\n\n" +
		"`TestWindow_Add_afterLongIdle` shows it, with `internal/serverside`.\n" +
		"The call runs the same instructions as before.\n" +
		"<!-- sample: TestHidden -->\n" +
		"```sh\ncd grpcbreaker && go test -count=1 -run Retry .\n```\n" +
		"Within 0.15 s, `ExampleNew` and `go test ./...` are a user's.\n"
	var lines []string
	for _, p := range docscheck.Maintainers("p.md", []byte(page)) {
		lines = append(lines, p.Pos)
	}
	assert.Equal(t, []string{"p.md:3", "p.md:3", "p.md:4", "p.md:7"}, lines)
}

// Every block of the guide that shows output (a log line, an error's
// text, JSON) is a sample that a test makes by running the code and
// compares (docsample.Check, in the module that can run it), so that a
// change of format fails that test. Every sample a test makes is on its
// page.
func TestGuide_everySampleMadeByATest(t *testing.T) {
	root := workspace(t).Root
	names, texts := guidePages(t, root)
	samples := map[string]string{} // page/name: where
	var problems []string
	for _, name := range names {
		marked, unmarked, err := docscheck.Samples(name, texts[name])
		require.NoError(t, err)
		for _, s := range marked {
			samples[name+"#"+s] = name
		}
		for _, p := range unmarked {
			problems = append(problems, p.String())
		}
	}

	out, err := exec.Command("git", "-C", root, "ls-files", "*_test.go").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	made := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		src, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		for _, c := range docscheck.Claims(f, src) {
			key := path.Join(path.Dir(f), c.Page) + "#" + c.Name
			if _, ok := samples[key]; !ok {
				problems = append(problems, c.Pos+": makes the sample "+key+", which no page has")
			}
			made[key] = true
		}
	}
	keys := make([]string, 0, len(samples))
	for k := range samples {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !made[k] {
			problems = append(problems, k+": no test makes this sample (docsample.Check)")
		}
	}
	if len(problems) > 0 {
		t.Errorf("samples of the guide:\n%s", strings.Join(problems, "\n"))
	}
}

func TestSamples(t *testing.T) {
	page := "# A page\n\n" +
		"<!-- sample: greeting -->\n```text\nhello\n```\n\n" +
		"```\nhello\n```\n\n" +
		"```json\n{}\n```\n\n" +
		"```sh\ngo get x\n```\n\n" +
		"```go\nx := 1\n```\n"
	names, unmarked, err := docscheck.Samples("p.md", []byte(page))
	require.NoError(t, err)
	assert.Equal(t, []string{"greeting"}, names)
	var pos []string
	for _, p := range unmarked {
		pos = append(pos, p.Pos)
	}
	assert.Equal(t, []string{"p.md:8", "p.md:12"}, pos)
}

func TestClaims(t *testing.T) {
	src := "func TestX(t *testing.T) {\n\tdocsample.Check(t, \"../docs/guide/p.md\", \"greeting\", got, *update)\n}\n"
	assert.Equal(t, []docscheck.Claim{{Pos: "x_test.go:2", Page: "../docs/guide/p.md", Name: "greeting"}},
		docscheck.Claims("x_test.go", []byte(src)))
}
