// Package distinct gives breakers' names the form an exporter can publish:
// valid UTF-8, and one distinct value per breaker. prombreaker,
// otelbreaker and expvarbreaker share it.
package distinct

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Names returns the published value of each of names, in order: the
// name itself when it is valid UTF-8 (as Prometheus label values and OTLP
// strings must be, and as encoding/json keeps map keys apart), with each
// invalid byte written as \xNN otherwise; a value taken already (by a name
// given twice, or one that reads as another's escaped form) gets " (2)",
// " (3)" and so on. Names valid as they are claim their values first, then
// the others in the order of their bytes, so the values do not depend on
// the order of names. Two breakers never share a series or a key, which
// in Prometheus would fail the whole scrape, in OTLP the whole batch.
func Names(names []string) []string {
	out := make([]string, len(names))
	clean := true
	for i, n := range names {
		out[i] = escapeInvalid(n)
		clean = clean && out[i] == n
	}
	if clean && !hasDuplicates(out) {
		return out
	}
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		va, vb := utf8.ValidString(names[a]), utf8.ValidString(names[b])
		if va != vb {
			if va {
				return -1
			}
			return 1
		}
		return strings.Compare(names[a], names[b])
	})
	taken := make(map[string]bool, len(names))
	for _, i := range order {
		v := out[i]
		for k := 2; taken[v]; k++ {
			v = out[i] + " (" + strconv.Itoa(k) + ")"
		}
		taken[v] = true
		out[i] = v
	}
	return out
}

// escapeInvalid returns s with each byte that is not part of valid UTF-8
// written as \xNN.
func escapeInvalid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// hasDuplicates reports whether a value appears twice in vs.
func hasDuplicates(vs []string) bool {
	seen := make(map[string]struct{}, len(vs))
	for _, v := range vs {
		if _, ok := seen[v]; ok {
			return true
		}
		seen[v] = struct{}{}
	}
	return false
}
