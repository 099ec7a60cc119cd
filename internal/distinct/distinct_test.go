package distinct_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/internal/distinct"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"valid names stay", []string{"a", "b"}, []string{"a", "b"}},
		{"invalid bytes escaped", []string{"a\xff"}, []string{`a\xff`}},
		{"names that escape alike stay apart", []string{"a\xff", `a\xff`}, []string{`a\xff (2)`, `a\xff`}},
		{"the same name twice", []string{"x", "x"}, []string{"x", "x (2)"}},
		{"order does not matter", []string{"a\xfe", "a\xff", `a\xfe`}, []string{`a\xfe (2)`, `a\xff`, `a\xfe`}},
		{"none", nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, distinct.Names(tc.in))
		})
	}
}
