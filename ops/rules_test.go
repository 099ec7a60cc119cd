package ops_test

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/ops/internal/stack"
)

// promtool returns promtool's path, and fails the test, saying how to
// install it, when it is missing.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := stack.LookPath("promtool")
	require.NoError(t, err)
	return p
}

func TestAlerts_checkRules(t *testing.T) {
	out, err := exec.Command(promtool(t), "check", "rules", "alerts.yml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "SUCCESS: 7 rules found")
}

func TestAlerts_promtoolTestRules(t *testing.T) {
	out, err := exec.Command(promtool(t), "test", "rules", "alerts_test.yml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "SUCCESS")
}

// The production file waits minutes; the end-to-end test's copy waits
// seconds, and is still a valid rule file.
func TestShorten(t *testing.T) {
	rules, err := os.ReadFile("alerts.yml")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\s+for: 10m$`, string(rules))
	assert.Contains(t, string(rules), "[5m]")

	short := stack.Shorten(rules, "3s", "5s")
	assert.NotRegexp(t, `(?m)^\s+for: [0-9]+[mh]$`, string(short))
	assert.NotRegexp(t, `\[[0-9]+m\]`, string(short))
	assert.Len(t, regexp.MustCompile(`(?m)^\s+for: 3s$`).FindAll(short, -1), 7)

	path := t.TempDir() + "/alerts.yml"
	require.NoError(t, os.WriteFile(path, short, 0o644))
	out, err := exec.Command(promtool(t), "check", "rules", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
}
