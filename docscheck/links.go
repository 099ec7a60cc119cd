package docscheck

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// A Link is the target of a Markdown link or image, outside fenced blocks:
// [text](target) or ![text](target).
type Link struct {
	Pos    string // file:line
	Target string
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// Links returns the links of a Markdown page, outside its fenced blocks
// and code spans.
func Links(file string, src []byte) []Link {
	var links []Link
	proseLines(src, func(n int, line string, _ bool) {
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			links = append(links, Link{Pos: file + ":" + strconv.Itoa(n+1), Target: m[1]})
		}
	})
	return links
}

// Anchors returns the anchors GitHub makes of a Markdown page's headings:
// the heading's text in lower case, without its punctuation but hyphens
// and underscores, spaces made hyphens, and -1, -2, ... after a repeat.
func Anchors(src []byte) map[string]bool {
	anchors := map[string]bool{}
	proseLines(src, func(_ int, line string, _ bool) {
		if !strings.HasPrefix(line, "#") {
			return
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		for i := 1; anchors[anchor]; i++ {
			anchor = fmt.Sprintf("%s-%d", b.String(), i)
		}
		anchors[anchor] = true
	})
	return anchors
}
