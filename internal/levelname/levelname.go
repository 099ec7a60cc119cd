// Package levelname reads the name of a criticality level as a header or
// metadata value carries it, without allocating: criticality.Parse and the
// server side's reading of the level a caller claims share it, so that a
// value that names no level costs a server no error it throws away.
package levelname

// Names are the levels' names as the SRE book writes them, by index:
// SHEDDABLE (0) … CRITICAL_PLUS (3).
var Names = [4]string{"SHEDDABLE", "SHEDDABLE_PLUS", "CRITICAL", "CRITICAL_PLUS"}

// Index returns the index in Names of the name s is, in any case of its
// ASCII letters, and whether s is one.
func Index(s string) (int, bool) {
	for i, name := range Names {
		if equalFoldASCII(s, name) {
			return i, true
		}
	}
	return 0, false
}

// equalFoldASCII reports whether s is name, an upper-case ASCII name, in
// any case. Unlike strings.EqualFold it folds ASCII letters only: a
// header's value is ASCII, and Unicode's folding would take "ſ" (U+017F)
// for an S, a name that a proxy comparing ASCII would not see.
func equalFoldASCII(s, name string) bool {
	if len(s) != len(name) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}
