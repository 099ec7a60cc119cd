package breaker

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the most bytes of a name a [Registry] keeps, so that names
// that come from outside (hosts of URLs users supply, gRPC methods a client
// sends, what a WithKey function of httpbreaker or grpcbreaker returns, a
// name given to [Get] or [Do]) cost a bounded amount of memory however long
// they are.
//
// A name of at most MaxNameLen bytes is kept as it is. A longer one is cut
// to its first 229 bytes (up to 3 fewer, to end on a UTF-8 boundary),
// followed by "…" and 24 hexadecimal digits of the SHA-256 of the whole
// name: MaxNameLen bytes at most in all, such as
//
//	aaaaaaaa…aaaa.example.com…3f2c9a0b17d4e65c8a91b2f0
//
// for a host of 1 MiB (the first "…" stands for the rest of the 229
// bytes). That cut form is the breaker's name: [Breaker.Name], [Stats].Name, the
// names [Registry.Range] gives and so the exporters' labels, and the text of
// a dropped call's error. Two long names that differ anywhere get different
// breakers; every call with the same long name gets the same one, and
// [Registry.Configure] and [Registry.NoBreakerFor] take the long name as Get
// does. A lookup of a long name hashes it whole and allocates the cut form,
// about 300 bytes: the price of a name that long, which shorter names do
// not pay.
//
// A registry also keeps a copy of each name rather than the caller's string,
// so that a short name sliced from a large string (a host from a long URL)
// does not keep that string alive.
const MaxNameLen = 256

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
