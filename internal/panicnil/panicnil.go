// Package panicnil runs tests of what the library does with panic(nil)
// under GODEBUG panicnil=1, where recover returns nil for it as for
// runtime.Goexit. The setting is read when a program starts, so such a
// test runs itself again in a child process that has it.
package panicnil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv marks the child process that InChild starts.
const childEnv = "SREBREAKER_PANICNIL_CHILD"

// InChild runs the test named name again in a child process with GODEBUG
// panicnil=1 and reports whether this is that child, where the test goes
// on; the parent fails t if the child fails, and returns false.
func InChild(t testing.TB, name string) bool {
	t.Helper()
	if os.Getenv(childEnv) == "1" {
		if v := func() (v any) {
			defer func() { v = recover() }()
			panic(nil)
		}(); v != nil {
			t.Fatalf("GODEBUG panicnil=1 is not in effect in the child: recover returned %v", v)
		}
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GODEBUG=panicnil=1", childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child with GODEBUG panicnil=1: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("the child with GODEBUG panicnil=1 did not run %s:\n%s", name, out)
	}
	return false
}

// Panics calls f and reports whether it panicked, and with what, panic(nil)
// under GODEBUG panicnil=1 included.
func Panics(f func()) (panicked bool, v any) {
	panicked = true
	defer func() { v = recover() }()
	f()
	return false, nil
}
