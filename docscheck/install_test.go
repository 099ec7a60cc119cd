package docscheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/docscheck"
)

// cloneDir is where docs/guide/install.md has the reader clone the
// repository; the test puts this checkout there.
const cloneDir = "/src/srebreaker"

// The install guide's route from a clone or a mirror works as written,
// offline: its commands run, outside any workspace and with GOPROXY=off,
// in an empty module whose program uses the core, with this checkout as
// the clone. Only local files are read; the clone command itself is the
// one line not run.
func TestInstall_fromAClone(t *testing.T) {
	root := workspace(t).Root
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	text := section(t, read(t, root, "docs/guide/install.md"), "## From a clone or a mirror")
	blocks, err := docscheck.Extract("install.md", []byte(text))
	require.NoError(t, err)
	var script []string
	for _, b := range blocks {
		require.Equal(t, "sh", b.Lang, "install.md's clone route is shell commands")
		for _, line := range strings.Split(strings.ReplaceAll(b.Text, "\\\n", ""), "\n") {
			if strings.HasPrefix(line, "git clone ") {
				assert.Contains(t, line, " "+cloneDir, "the clone goes to %s, where the other commands look", cloneDir)
				continue
			}
			script = append(script, strings.ReplaceAll(line, cloneDir, root))
		}
	}
	require.Contains(t, strings.Join(script, "\n"), "go build", "the route ends with a build")

	dir := t.TempDir()
	main := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/srebreaker/srebreaker/breaker\"\n)\n\n" +
		"func main() { fmt.Println(breaker.MustNew(breaker.WithName(\"payments\")).Name()) }\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644))
	env := append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local",
		// A checksum the go.sum lines do not hold would be looked up: on
		// loopback, where nothing answers, so that the test fails.
		"GOSUMDB=sum.golang.org https://127.0.0.1:1")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
		return string(out)
	}
	run("go", "mod", "init", "example.com/app")
	run("sh", "-e", "-c", strings.Join(script, "\n"))
	assert.Equal(t, "payments\n", run("go", "run", "."))
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(gomod), "github.com/srebreaker/srebreaker => "+root)
}
