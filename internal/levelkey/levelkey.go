// Package levelkey holds the context key under which package criticality
// carries a call's level, so that the server sides' own context (package
// chain's), which they allocate for a request they serve anyway, carries
// the level too, with no context of its own.
package levelkey

// Key is the key: a pointer to a type with a size is unlike any other
// key, and compares in line.
var Key = &struct{ name string }{"criticality"}
