package docscheck_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/docscheck"
)

func TestLinks(t *testing.T) {
	page := "See [a](guide/a.md#x), ![pic](p.svg \"title\") and [web](https://x.org).\n\n" +
		"```go\n// [no](link.md)\n```\n`[no](code.md)` [b](#top)\n"
	assert.Equal(t, []docscheck.Link{
		{Pos: "p.md:1", Target: "guide/a.md#x"},
		{Pos: "p.md:1", Target: "p.svg"},
		{Pos: "p.md:1", Target: "https://x.org"},
		{Pos: "p.md:6", Target: "#top"},
	}, docscheck.Links("p.md", []byte(page)))
}

func TestAnchors(t *testing.T) {
	page := "# Top\n\n## The live bucket (old core against new)\n\n## `WithK`, K's range\n\n## Results\n\n## Results\n\n```sh\n# not a heading\n```\n"
	assert.Equal(t, map[string]bool{
		"top": true, "the-live-bucket-old-core-against-new": true, "withk-ks-range": true,
		"results": true, "results-1": true,
	}, docscheck.Anchors([]byte(page)))
}

// pendingPages holds the pages that the guide links to and that are
// written apart from it, with what they are. Once a page is in the
// repository, its entry goes.
var pendingPages = map[string]string{}

// Every relative link of README.md and docs/ reaches a file of the
// repository, and a link to a heading of a page reaches a heading.
func TestRepository_linksResolve(t *testing.T) {
	w := workspace(t)
	texts := pages(t, w.Root)
	files := make([]string, 0, len(texts))
	for f := range texts {
		files = append(files, f)
	}
	sort.Strings(files)
	var broken []string
	for _, f := range files {
		for _, l := range docscheck.Links(f, texts[f]) {
			if regexp.MustCompile(`^[a-z]+:`).MatchString(l.Target) {
				continue
			}
			target, anchor, _ := strings.Cut(l.Target, "#")
			file := f
			if target != "" {
				file = path.Join(path.Dir(f), target)
			}
			src, err := os.ReadFile(filepath.Join(w.Root, filepath.FromSlash(file)))
			if err != nil {
				if info, serr := os.Stat(filepath.Join(w.Root, filepath.FromSlash(file))); serr == nil && info.IsDir() {
					continue
				}
				if _, ok := pendingPages[file]; ok {
					continue
				}
				broken = append(broken, l.Pos+": "+l.Target+": no file "+file)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !docscheck.Anchors(src)[anchor] {
				broken = append(broken, l.Pos+": "+l.Target+": "+file+" has no heading #"+anchor)
			}
		}
	}
	if len(broken) > 0 {
		t.Fatalf("links that lead nowhere:\n%s", strings.Join(broken, "\n"))
	}
	for page := range pendingPages {
		_, err := os.Stat(filepath.Join(w.Root, filepath.FromSlash(page)))
		assert.Error(t, err, "%s exists now: remove it from pendingPages", page)
	}
}

// mentionsElsewhere holds the files whose mentions of paths under docs/
// are not this repository's pages, with why.
var mentionsElsewhere = map[string]string{
	"tools/check-tracked-test.sh": "makes files under docs/ of a repository of its own, to test the check",
	"CHANGELOG.md":                "history: it names the pages as they were then",
	"docscheck/docs_test.go":      "makes up a page to test the compile check",
}

// Every path under docs/ that a tracked file names (a Go comment, a
// script, the Makefile, a page) exists: pages move, and what names them
// follows.
func TestRepository_mentionedPagesExist(t *testing.T) {
	w := workspace(t)
	out, err := exec.Command("git", "-C", w.Root, "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	mention := regexp.MustCompile(`(?:^|[^\w/.])(docs/[\w./-]*\w\.(?:md|svg|png))`)
	var missing []string
	for _, f := range strings.Fields(string(out)) {
		if _, ok := mentionsElsewhere[f]; ok {
			continue
		}
		src, err := os.ReadFile(filepath.Join(w.Root, f))
		if err != nil || strings.ContainsRune(string(src[:min(len(src), 512)]), 0) {
			continue
		}
		for n, line := range strings.Split(string(src), "\n") {
			for _, m := range mention.FindAllStringSubmatch(line, -1) {
				if _, ok := pendingPages[m[1]]; ok {
					continue
				}
				if _, err := os.Stat(filepath.Join(w.Root, m[1])); err != nil {
					missing = append(missing, f+":"+strconv.Itoa(n+1)+": "+m[1])
				}
			}
		}
	}
	require.Empty(t, missing, "paths under docs/ that do not exist")
}
