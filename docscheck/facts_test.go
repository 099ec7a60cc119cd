package docscheck_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
)

// published returns the Makefile's PUBLISHED_MODULES, the nested modules
// that releases tag: the one list the others are compared with.
func published(t *testing.T, root string) []string {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^PUBLISHED_MODULES\s*:=\s*(.+)$`).FindSubmatch(makefile)
	require.NotNil(t, m, "the Makefile sets PUBLISHED_MODULES")
	return strings.Fields(string(m[1]))
}

func read(t *testing.T, root, file string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, file))
	require.NoError(t, err)
	return string(src)
}

// section returns the text of a Markdown page from the heading that
// starts with title up to the next heading of the same level.
func section(t *testing.T, page, title string) string {
	t.Helper()
	i := strings.Index(page, "\n"+title)
	require.GreaterOrEqual(t, i, 0, "a heading %q", title)
	rest := page[i+len(title)+1:]
	level := title[:strings.IndexByte(title, ' ')+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

var countWord = regexp.MustCompile(`(?i)\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|[0-9]+) (?:other |nested |published )*modules\b`)

// The published modules are listed alike wherever they are listed: the
// README's install section and the install guide, docs/design/releasing.md's
// table and commands, go.work (a use and a replace each), and docscheck's
// go.mod (which compiles their snippets). No page counts them in words: a
// count is a second copy of the list, and drifts.
func TestModules_listedAlike(t *testing.T) {
	root := workspace(t).Root
	want := published(t, root)
	nested := regexp.MustCompile(`github\.com/srebreaker/srebreaker/([a-z]+)`)
	names := func(text string) []string {
		seen := map[string]bool{}
		var got []string
		for _, m := range nested.FindAllStringSubmatch(text, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				got = append(got, m[1])
			}
		}
		return got
	}

	readme := read(t, root, "README.md")
	assert.ElementsMatch(t, want, names(section(t, readme, "## Install")), "README.md's install section")
	install := read(t, root, "docs/guide/install.md")
	assert.ElementsMatch(t, want, names(section(t, install, "## The nested modules")), "docs/guide/install.md")

	releasing := read(t, root, "docs/design/releasing.md")
	var table []string
	for _, m := range regexp.MustCompile("(?m)^\\| `github\\.com/srebreaker/srebreaker/([a-z]+)` \\|").FindAllStringSubmatch(releasing, -1) {
		table = append(table, m[1])
	}
	assert.ElementsMatch(t, want, table, "docs/design/releasing.md's table")
	loops := regexp.MustCompile(`for m in ([a-z ]+);`).FindAllStringSubmatch(releasing, -1)
	require.NotEmpty(t, loops, "docs/design/releasing.md's commands loop over the modules")
	for _, m := range loops {
		assert.ElementsMatch(t, want, strings.Fields(m[1]), "docs/design/releasing.md: for m in %s", m[1])
	}

	work := read(t, root, "go.work")
	for _, m := range want {
		assert.Regexp(t, `(?m)^\s*\./`+m+`\s*$`, work, "go.work uses %s", m)
		assert.Regexp(t, `(?m)^\s*github\.com/srebreaker/srebreaker/`+m+` v\S+ => \./`+m+`\s*$`, work, "go.work replaces %s", m)
	}
	gomod := read(t, root, "docscheck/go.mod")
	for _, m := range want {
		assert.Contains(t, gomod, "github.com/srebreaker/srebreaker/"+m+" ", "docscheck/go.mod requires %s", m)
	}

	for _, page := range []string{"README.md", "docs/guide/install.md", "docs/design/releasing.md"} {
		for _, m := range countWord.FindAllString(read(t, root, page), -1) {
			t.Errorf("%s counts the modules (%q): name them, or point at the list", page, m)
		}
	}
}

// The Go versions the README and the install guide give for the nested
// modules are their go.mod's go lines.
func TestModules_goVersionsAlike(t *testing.T) {
	root := workspace(t).Root
	install := section(t, read(t, root, "docs/guide/install.md"), "## The nested modules")
	for _, m := range published(t, root) {
		goLine := regexp.MustCompile(`(?m)^go (1\.[0-9]+)`).FindStringSubmatch(read(t, root, m+"/go.mod"))
		require.NotNil(t, goLine, "%s/go.mod has a go line", m)
		assert.Regexp(t, "(?m)^\\| `github\\.com/srebreaker/srebreaker/"+m+"` \\|.*\\| Go "+regexp.QuoteMeta(goLine[1])+" \\|$",
			install, "docs/guide/install.md gives %s's Go", m)
	}
}

// The defaults and ranges docs/guide/options.md gives for the core's
// options are the ones breaker.New keeps to: each default is the named
// constant, each bound is accepted, and just past it is an error.
func TestOptions_rangesAsDocumented(t *testing.T) {
	root := workspace(t).Root
	rows := map[string][]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(With[A-Za-z]+)\\([^)]*\\)` \\| ([^|]+) \\| ([^|]+) \\|$").
		FindAllStringSubmatch(read(t, root, "docs/guide/options.md"), -1) {
		rows[m[1]] = []string{strings.TrimSpace(m[2]), strings.TrimSpace(m[3])}
	}
	accepts := func(opt breaker.Option) bool { _, err := breaker.New(opt); return err == nil }
	duration := func(s string) time.Duration {
		s = strings.NewReplacer(" ", "", "min", "m").Replace(s)
		d, err := time.ParseDuration(s)
		require.NoError(t, err, s)
		return d
	}
	bound := func(option, pattern string) string {
		row := rows[option]
		require.NotNil(t, row, "docs/guide/options.md has a row for %s", option)
		m := regexp.MustCompile(pattern).FindStringSubmatch(row[1])
		require.NotNil(t, m, "%s's row states its range as %s: %q", option, pattern, row[1])
		return m[1]
	}

	require.Contains(t, rows, "WithK")
	assert.Equal(t, strconv.FormatFloat(breaker.DefaultK, 'f', -1, 64), rows["WithK"][0], "WithK's default")
	k, err := strconv.ParseFloat(bound("WithK", `≥ ([0-9.]+)`), 64)
	require.NoError(t, err)
	assert.True(t, accepts(breaker.WithK(k)), "WithK(%v)", k)
	assert.False(t, accepts(breaker.WithK(k-0.001)), "WithK(%v)", k-0.001)

	require.Contains(t, rows, "WithProtection")
	assert.Equal(t, strconv.Itoa(breaker.DefaultProtection), rows["WithProtection"][0], "WithProtection's default")
	p, err := strconv.Atoi(bound("WithProtection", `≥ ([0-9]+)`))
	require.NoError(t, err)
	assert.True(t, accepts(breaker.WithProtection(p)), "WithProtection(%d)", p)
	assert.False(t, accepts(breaker.WithProtection(p-1)), "WithProtection(%d)", p-1)

	require.Contains(t, rows, "WithWindow")
	assert.Equal(t, breaker.DefaultWindow, duration(rows["WithWindow"][0]), "WithWindow's default")
	w := duration(bound("WithWindow", `≥ ([0-9]+ ?m?s)`))
	assert.True(t, accepts(breaker.WithWindow(w)), "WithWindow(%v)", w)
	assert.False(t, accepts(breaker.WithWindow(w-time.Nanosecond)), "WithWindow(%v)", w-time.Nanosecond)

	lo := duration(bound("WithSlowCall", `from a bucket of the window \(([0-9]+ ?m?s)\)`))
	hi := duration(bound("WithSlowCall", `to ([0-9]+ ?(?:min|s))`))
	assert.True(t, accepts(breaker.WithSlowCall(lo)), "WithSlowCall(%v)", lo)
	assert.False(t, accepts(breaker.WithSlowCall(lo-time.Nanosecond)), "WithSlowCall(%v)", lo-time.Nanosecond)
	assert.True(t, accepts(breaker.WithSlowCall(hi)), "WithSlowCall(%v)", hi)
	assert.False(t, accepts(breaker.WithSlowCall(hi+time.Nanosecond)), "WithSlowCall(%v)", hi+time.Nanosecond)
}
