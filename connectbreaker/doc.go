// Package connectrpc is documented in doc.go.
package connectbreaker
