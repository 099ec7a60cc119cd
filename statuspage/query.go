package statuspage

import (
	"net/url"
	"strings"
)

// maxEscapedFormat is the longest value of the format parameter that can
// name a format: "html" with each byte escaped (%68%74%6D%6C).
const maxEscapedFormat = 3 * len("html")

// maxQuotedFormat is how much of a format that names none the error
// quotes.
const maxQuotedFormat = 32

// queryFormat returns the format a request's raw query asks for: the first
// value of its format parameter, read as url.ParseQuery reads it (a pair
// with a semicolon, or with a malformed escape, is skipped), or "" for
// none. ok is false when that value is none of "", "html" and "json";
// format is then cut to maxQuotedFormat bytes, for the error.
//
// Unlike url.ParseQuery it reads the query in place: a query of any length
// costs no more than a few bytes of memory, and past 10,000 parameters
// (where url.ParseQuery gives up and returns none) format still counts.
func queryFormat(query string) (format string, ok bool) {
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		key, value, _ := strings.Cut(pair, "=")
		if !unescapesTo(key, "format") || strings.Contains(value, ";") || !validEscapes(value) {
			continue
		}
		switch {
		case value == "", unescapesTo(value, "html"), unescapesTo(value, "json"):
			v, _ := url.QueryUnescape(value) // a few bytes, escaped or not
			return v, true
		case len(value) > maxEscapedFormat:
			return cut(value, maxQuotedFormat), false
		}
		v, _ := url.QueryUnescape(value) // at most maxEscapedFormat bytes
		return v, false
	}
	return "", true
}

// unescapesTo reports whether s, a key or a value of a query, unescapes to
// want, without the copy url.QueryUnescape makes: %XX is the byte XX, +
// a space. A malformed escape or a semicolon is never want, as
// url.ParseQuery skips a pair holding either.
func unescapesTo(s, want string) bool {
	j := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		case '+':
			c = ' '
		case ';':
			return false
		}
		if j >= len(want) || want[j] != c {
			return false
		}
		j++
	}
	return j == len(want)
}

// validEscapes reports whether every % in s starts an escape of two hex
// digits, as url.QueryUnescape requires.
func validEscapes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
