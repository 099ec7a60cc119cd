package docscheck_test

import (
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/docscheck"
)

// notOurs holds the backticked names of README.md, docs/ and the Go
// comments that are no Go name of this repository or of a package it
// imports, each with why. A key ending in a dot stands for every name
// qualified by it.
var notOurs = map[string]string{
	"sqlx.":                           "go-zero's core/stores/sqlx, which no module here imports",
	"SqlConn":                         "go-zero's sqlx.SqlConn",
	"NewMysql":                        "go-zero's sqlx.NewMysql",
	"Transact":                        "go-zero's SqlConn.Transact",
	"conn.TransactCtx":                "go-zero's SqlConn.TransactCtx",
	"redis.MustNewRedis":              "go-zero's core/stores/redis, imported by no module here",
	"google.rpc.":                     "a protobuf message's full name (google.rpc.ErrorInfo), not a Go name",
	"RetryBudget":                     "failsafe-go's budget, which no module here imports",
	"RegistryGetParallel":             "a benchmark's name as benchstat prints it, without its Benchmark prefix",
	"SrebreakerSheddingSustained":     "an alert of ops/alerts.yml, not a Go name",
	"SrebreakerCriticalShed":          "an alert of ops/alerts.yml, not a Go name",
	"SrebreakerOverrideLeftInForce":   "an alert of ops/alerts.yml, not a Go name",
	"SrebreakerOverrideHidesFailures": "an alert of ops/alerts.yml, not a Go name",
	"SrebreakerFleetRedisDown":        "an alert of ops/alerts.yml, not a Go name",
	"SrebreakerServerRejectsCritical": "an alert of ops/alerts.yml, not a Go name",
	"SrebreakerServerOverloaded":      "an alert of ops/alerts.yml, not a Go name",
}

var (
	indexOnce sync.Once
	index     *docscheck.Index
	indexErr  error
)

// repoIndex returns the repository's index, loaded once for the tests
// that share it.
func repoIndex(t *testing.T) *docscheck.Index {
	t.Helper()
	w := workspace(t)
	indexOnce.Do(func() { index, indexErr = docscheck.Load(w.Root) })
	require.NoError(t, indexErr)
	return index
}

// Every doc link in a Go comment of any package of any module resolves: a
// bracketed Name or Type.Method to the package's own declarations, a
// pkg.Name to a package its files import. go doc shows one that does not as
// plain text.
func TestRepository_docLinksResolve(t *testing.T) {
	ix := repoIndex(t)
	var stale []string
	for _, p := range ix.DocLinks() {
		stale = append(stale, p.String())
	}
	if len(stale) > 0 {
		t.Fatalf("doc links that resolve to nothing:\n%s", strings.Join(stale, "\n"))
	}
}

// Every name in backticks in README.md, docs/ and the Go comments that
// looks like an exported Go name exists: in this repository's packages, or
// a package they import, or notOurs says whose it is.
func TestRepository_backtickedNamesExist(t *testing.T) {
	ix := repoIndex(t)
	tokens := ix.CommentTokens()
	texts := pages(t, ix.Root)
	files := make([]string, 0, len(texts))
	for f := range texts {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		tokens = append(tokens, docscheck.MarkdownTokens(f, texts[f])...)
	}
	var stale []string
	used := map[string]bool{}
	for _, tok := range tokens {
		if msg := ix.CheckName(tok.Text, nil); msg != "" {
			if ix.CheckName(tok.Text, notOurs) == "" {
				used[allowKey(tok.Text)] = true
				continue
			}
			stale = append(stale, tok.Pos+": "+msg)
		}
	}
	if len(stale) > 0 {
		t.Fatalf("stale names (rename them, or add another project's to notOurs with why):\n%s", strings.Join(stale, "\n"))
	}
	var unused []string
	for key := range notOurs {
		if !used[key] {
			unused = append(unused, key)
		}
	}
	sort.Strings(unused)
	require.Empty(t, unused, "notOurs holds names no doc uses any more: remove them")
}

// allowKey returns the key of notOurs that lets span through.
func allowKey(span string) string {
	name := docscheck.Name(span)
	if _, ok := notOurs[name]; ok {
		return name
	}
	for key := range notOurs {
		if strings.HasSuffix(key, ".") && strings.HasPrefix(name, key) {
			return key
		}
	}
	return ""
}
