// Package docsample keeps the sample outputs that the guide's pages show
// (log lines, error texts, JSON) equal to what the code prints.
//
// A sample is a fenced block of a Markdown page, right below an HTML
// comment that names it:
//
//	<!-- sample: override-error -->
//	```text
//	breaker: service unavailable (...)
//	```
//
// A test that runs the code makes the text and calls [Check] with the
// page, the name and the text. Check fails the test when the block differs,
// and with update set (the test's -update flag) writes the text into the
// page instead. The docscheck module fails on a sample block of the guide
// that no test's Check names, and on a Check of a sample that no page has.
package docsample

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Marker returns the HTML comment that names a sample on a page.
func Marker(name string) string { return "<!-- sample: " + name + " -->" }

// Check compares text with the block named name on the Markdown page at
// path (relative to the test's directory), or writes text into that block
// when update is set. text is the whole content of the block; a final
// newline is added if it has none.
func Check(t testing.TB, path, name, text string, update bool) {
	t.Helper()
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("docsample: %v", err)
	}
	start, end, err := block(string(src), name)
	if err != nil {
		t.Fatalf("docsample: %s: %v", path, err)
	}
	page := string(src)
	if update {
		if page[start:end] == text {
			return
		}
		page = page[:start] + text + page[end:]
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatalf("docsample: %v", err)
		}
		t.Logf("docsample: rewrote %q in %s", name, path)
		return
	}
	if got := page[start:end]; got != text {
		t.Errorf("docsample: the sample %q of %s is not what the code prints (go test -update rewrites it)\n--- page\n%s--- code\n%s", name, path, got, text)
	}
}

// block returns the byte offsets of the content of the fenced block right
// below the sample's marker: from its first line to its closing fence.
func block(page, name string) (start, end int, err error) {
	marker := Marker(name)
	i := strings.Index(page, marker+"\n")
	if i < 0 {
		return 0, 0, fmt.Errorf("no line %q", marker)
	}
	if strings.Contains(page[i+len(marker):], marker+"\n") {
		return 0, 0, fmt.Errorf("two lines %q", marker)
	}
	rest := page[i+len(marker)+1:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		nl = len(rest)
	}
	open := rest[:nl]
	fence := open[:len(open)-len(strings.TrimLeft(open, "`"))]
	if fence == "" {
		fence = open[:len(open)-len(strings.TrimLeft(open, "~"))]
	}
	if len(fence) < 3 || nl == len(rest) {
		return 0, 0, fmt.Errorf("no fenced block right below %q", marker)
	}
	start = i + len(marker) + 1 + nl + 1
	for off := start; off < len(page); {
		line, _, _ := strings.Cut(page[off:], "\n")
		if strings.HasPrefix(line, fence) && strings.Trim(line, fence[:1]+" \t") == "" {
			return start, off, nil
		}
		off += len(line) + 1
	}
	return 0, 0, fmt.Errorf("the block below %q is never closed", marker)
}
