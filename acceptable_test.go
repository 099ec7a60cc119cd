package srebreaker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker"
)

func TestDefaultAcceptable(t *testing.T) {
	assert.True(t, srebreaker.DefaultAcceptable(nil))
	assert.False(t, srebreaker.DefaultAcceptable(errors.New("boom")))
	assert.False(t, srebreaker.DefaultAcceptable(context.DeadlineExceeded))
	assert.False(t, srebreaker.DefaultAcceptable(fmt.Errorf("wrapped: %w", context.Canceled)))
}

func ExampleAcceptable() {
	errNotFound := errors.New("not found")
	// A "not found" answer comes from a healthy dependency: count it as a success.
	var acceptable srebreaker.Acceptable = func(err error) bool {
		return err == nil || errors.Is(err, errNotFound)
	}
	fmt.Println(acceptable(nil), acceptable(fmt.Errorf("user 7: %w", errNotFound)), acceptable(errors.New("timeout")))
	// Output: true true false
}
