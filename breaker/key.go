package breaker

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// cutHashLen is how many bytes of the SHA-256 a cut name ends with, in
// hexadecimal: 96 bits, beyond the reach of an accidental collision.
const cutHashLen = 12

// cutMark separates a cut name's prefix from its hash.
const cutMark = "…"

// boundName returns name if it is at most MaxNameLen bytes long, and its cut
// form (see MaxNameLen) otherwise. Small enough to be inlined: a short name
// costs one comparison.
func boundName(name string) string {
	if len(name) <= MaxNameLen {
		return name
	}
	return cutName(name)
}

// cutName returns the cut form of a name longer than MaxNameLen: a new
// string of at most MaxNameLen bytes that shares no memory with name. The
// prefix ends on a rune boundary when name is valid UTF-8 (at most
// utf8.UTFMax-1 bytes are dropped to find one); otherwise it is cut where
// the bytes allow.
func cutName(name string) string {
	sum := hashName(name)
	n := MaxNameLen - len(cutMark) - 2*cutHashLen
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(name[n]); i++ {
		n--
	}
	var sb strings.Builder
	sb.Grow(n + len(cutMark) + 2*cutHashLen)
	sb.WriteString(name[:n])
	sb.WriteString(cutMark)
	var h [2 * cutHashLen]byte
	hex.Encode(h[:], sum[:cutHashLen])
	sb.Write(h[:])
	return sb.String()
}

// hashName returns the SHA-256 of name, read through a small buffer: a
// conversion of a long name to []byte would copy it whole.
func hashName(name string) [sha256.Size]byte {
	h := sha256.New()
	var buf [4096]byte
	for len(name) > 0 {
		k := copy(buf[:], name)
		h.Write(buf[:k])
		name = name[k:]
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// ownName returns the name a registry keeps for name: bounded, and a copy
// that holds nothing of the caller's string.
func ownName(name string) string {
	if len(name) <= MaxNameLen {
		return strings.Clone(name)
	}
	return cutName(name)
}
