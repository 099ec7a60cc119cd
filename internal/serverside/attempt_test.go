package serverside

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseAttempt(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
	}{
		{"", 1}, {"1", 1}, {"3", 3}, {"0", 1}, {"-4", 1}, {"+4", 1}, {"two", 1}, {" 2", 1},
		{"99", 99}, {"100", MaxAttempt}, {"1000", MaxAttempt}, {"99999999999999999999999", MaxAttempt},
	} {
		assert.Equal(t, tc.want, ParseAttempt(tc.v), "%q", tc.v)
	}
}

func TestAfterPrevious(t *testing.T) {
	for _, tc := range []struct {
		name string
		vs   []string
		want int
	}{
		{name: "absent", want: 1},
		{name: "first attempt", vs: []string{"0"}, want: 1},
		{name: "first retry", vs: []string{"1"}, want: 2},
		{name: "not numbers", vs: []string{"-1", "x", ""}, want: 1},
		{name: "the highest", vs: []string{"4", "2", "junk"}, want: 5},
		{name: "capped", vs: []string{"99"}, want: MaxAttempt},
		{name: "beyond an int", vs: []string{"99999999999999999999999"}, want: MaxAttempt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, AfterPrevious(tc.vs))
		})
	}
}
