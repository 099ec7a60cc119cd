package docscheck

import (
	"regexp"
	"strconv"
	"strings"
)

// A Pattern is a kind of text that a guide page must not hold, with why.
type Pattern struct {
	Re  *regexp.Regexp
	Why string
}

// MaintainersMaterial lists what belongs to a design page, or to no page,
// rather than to the guide: a guide page answers a user's task and says
// nothing of how the code came to be or how it is tested.
var MaintainersMaterial = []Pattern{
	{regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z_]\w*`), "a test's name: say what holds, and leave the test to a design page"},
	{regexp.MustCompile(`\bgo test\b[^\n]*-(?:run|bench|fuzz)\b`), "a command that runs chosen tests or benchmarks: a design page gives it with the figure"},
	{regexp.MustCompile(`\b[\w./-]*internal/\w+`), "an internal package, which a user cannot import"},
	{regexp.MustCompile(`\b\w+_(?:internal_)?test\.go\b|\btestdata/`), "a test's file, unless an example's"},
	{regexp.MustCompile(`\bUPDATE_[A-Z_]+=`), "how a maintainer regenerates a file"},
	{regexp.MustCompile(`(?i)\bsame [\w ]{0,20} as before\b|\(before:|\bbefore (?:this|the) change\b|\bpreviously\b`), "a comparison with an earlier state of the code: that is the CHANGELOG's"},
	{regexp.MustCompile(`(?i)\b(?:were|was|been) checked (?:with|against|on)\b|\btools/release\b`), "how a step was checked: a test checks it"},
	{regexp.MustCompile(`\bv0\.0\.0-\d{14}-[0-9a-f]{12}\b`), "a pseudo-version of this repository, which ages"},
	{regexp.MustCompile(`(?i)\b(?:as|see|in) the README\b`), "a pointer to a passage elsewhere: link the page and heading"},
	{regexp.MustCompile(`\bissue \d+\b|\bcommit [0-9a-f]{7,}\b`), "the history of the code"},
}

// htmlComment is an HTML comment on one line, which a reader does not see.
var htmlComment = regexp.MustCompile(`<!--.*?-->`)

// Maintainers returns the lines of a guide page, in its prose and its
// blocks, that match one of [MaintainersMaterial].
func Maintainers(file string, src []byte) []Problem {
	var found []Problem
	for n, line := range strings.Split(string(src), "\n") {
		line = htmlComment.ReplaceAllString(line, "")
		for _, p := range MaintainersMaterial {
			// An example's file is a user's reading, as on pkg.go.dev.
			if m := p.Re.FindString(line); m != "" && !strings.HasSuffix(m, "example_test.go") {
				found = append(found, Problem{Pos: file + ":" + strconv.Itoa(n+1), Text: strconv.Quote(m) + ": " + p.Why})
			}
		}
	}
	return found
}

// sampleMarker is the comment that names the sample in the block below it;
// see package internal/docsample of the core module.
var sampleMarker = regexp.MustCompile(`^<!-- sample: ([\w.-]+) -->$`)

// NotSample reports whether a block of a given tag is not a sample output:
// Go, a shell command, or a configuration file the reader writes.
func NotSample(lang string) bool {
	switch lang {
	case "go", "sh", "yaml":
		return true
	}
	return false
}

// Samples returns the names of a page's samples, each the block below a
// line <!-- sample: name -->, and the blocks that show output (any tag but
// those of [NotSample], or none) without such a line.
func Samples(file string, src []byte) (names []string, unmarked []Problem, err error) {
	blocks, err := Extract(file, src)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(string(src), "\n")
	for _, b := range blocks {
		above := "" // the line above the fence (b.Line is the line below it)
		if b.Line >= 3 {
			above = strings.TrimSpace(lines[b.Line-3])
		}
		if m := sampleMarker.FindStringSubmatch(above); m != nil {
			names = append(names, m[1])
			continue
		}
		if !NotSample(b.Lang) {
			unmarked = append(unmarked, Problem{Pos: file + ":" + strconv.Itoa(b.Line-1),
				Text: "a block tagged " + strconv.Quote(b.Lang) + " shows output that no test produces: " +
					"mark it <!-- sample: name --> and make it in a test (internal/docsample), tag a command sh, or say it in prose"})
		}
	}
	return names, unmarked, nil
}

// A Claim is a test's call of docsample.Check: the sample it makes, and
// the page it names, relative to the test's file.
type Claim struct {
	Pos  string // file:line of the call
	Page string // the page's path as written, relative to the file's directory
	Name string
}

var checkCall = regexp.MustCompile(`docsample\.Check\(\w+,\s*"([^"]+)",\s*"([^"]+)"`)

// Claims returns the calls of docsample.Check in a Go file, whose page and
// sample name are string literals.
func Claims(file string, src []byte) []Claim {
	var claims []Claim
	for n, line := range strings.Split(string(src), "\n") {
		for _, m := range checkCall.FindAllStringSubmatch(line, -1) {
			claims = append(claims, Claim{Pos: file + ":" + strconv.Itoa(n+1), Page: m[1], Name: m[2]})
		}
	}
	return claims
}
