package ops_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/ops"
)

// rule is what docs/guide/alerting.md says of an alert, and alerts.yml.
type rule struct{ name, forDur, severity string }

// rules reads the alerts of alerts.yml: name, for and severity.
func rules(t *testing.T) []rule {
	b, err := os.ReadFile("alerts.yml")
	require.NoError(t, err)
	var out []rule
	for _, block := range strings.Split(string(b), "- alert: ")[1:] {
		r := rule{name: strings.Fields(block)[0]}
		if m := regexp.MustCompile(`(?m)^\s+for: (\S+)$`).FindStringSubmatch(block); m != nil {
			r.forDur = m[1]
		}
		if m := regexp.MustCompile(`(?m)^\s+severity: (\S+)$`).FindStringSubmatch(block); m != nil {
			r.severity = m[1]
		}
		out = append(out, r)
	}
	return out
}

// The alerting guide's table of alerts is the file's: every alert, with
// its for and severity, and its panels table names the dashboard's panels.
func TestDocs_alertingGuideMatchesTheFiles(t *testing.T) {
	b, err := os.ReadFile("../docs/guide/alerting.md")
	require.NoError(t, err)
	page := string(b)

	var documented []rule
	row := regexp.MustCompile("(?m)^\\| `(Srebreaker[A-Za-z]+)` \\|[^|]*\\| (\\S+) \\| (\\S+) \\|$")
	for _, m := range row.FindAllStringSubmatch(page, -1) {
		documented = append(documented, rule{name: m[1], forDur: m[2], severity: m[3]})
	}
	assert.Equal(t, rules(t), documented, "the table of alerts in docs/guide/alerting.md")

	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`Srebreaker[A-Za-z]+`).FindAllString(page, -1) {
		named[m] = true
	}
	for _, r := range rules(t) {
		delete(named, r.name)
	}
	assert.Empty(t, named, "alerts the page names that alerts.yml does not have")

	var titles, want []string
	for _, m := range regexp.MustCompile(`(?m)^\| ([A-Z][a-z][^|]*?) \| [^|]*\| [^|]*\|$`).FindAllStringSubmatch(page, -1) {
		titles = append(titles, m[1])
	}
	for _, p := range ops.Panels {
		want = append(want, p.Title)
	}
	sort.Strings(titles)
	sort.Strings(want)
	assert.Equal(t, want, titles, "the table of panels in docs/guide/alerting.md")
}
