package grpcbreaker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/grpcbreaker"
)

// A server's option is not a client's: passing it to NewClientInterceptors
// does not compile.
func TestOption_sides(t *testing.T) {
	for name, opt := range map[string]any{
		"WithRegistry":     grpcbreaker.WithRegistry(breaker.MustNewRegistry()),
		"WithKey":          grpcbreaker.WithKey(grpcbreaker.DefaultKey),
		"WithFailureCodes": grpcbreaker.WithFailureCodes(codes.Internal),
	} {
		assert.IsType(t, grpcbreaker.Option(nil), opt, name)
		assert.Implements(t, (*grpcbreaker.ServerOption)(nil), opt, name)
	}
	opt := any(grpcbreaker.WithCriticalityPolicy(grpcbreaker.IgnoreMetadata()))
	assert.Implements(t, (*grpcbreaker.ServerOption)(nil), opt)
	_, ok := opt.(grpcbreaker.Option)
	assert.False(t, ok, "WithCriticalityPolicy is a client's option")
}

// An invalid option's error wraps ErrInvalidOption and names the option
// and its value, on both sides.
func TestNewInterceptors_invalidOptionNamed(t *testing.T) {
	const want = "grpcbreaker: invalid option: WithFailureCodes(Code(99)): Code(99) cannot be a failure code; " +
		"valid codes are Canceled to Unauthenticated"
	_, err := grpcbreaker.NewClientInterceptors(grpcbreaker.WithFailureCodes(99))
	assert.ErrorIs(t, err, grpcbreaker.ErrInvalidOption)
	assert.EqualError(t, err, want)
	_, err = grpcbreaker.NewServerInterceptors(grpcbreaker.WithFailureCodes(99))
	assert.ErrorIs(t, err, grpcbreaker.ErrInvalidOption)
	assert.EqualError(t, err, want)
}

func TestNewInterceptors_nilOption(t *testing.T) {
	const want = "grpcbreaker: invalid option: a nil option was given"
	ci, err := grpcbreaker.NewClientInterceptors(nil)
	assert.Nil(t, ci)
	assert.ErrorIs(t, err, grpcbreaker.ErrInvalidOption)
	assert.EqualError(t, err, want)
	var nilOption grpcbreaker.Option
	for _, opt := range []grpcbreaker.ServerOption{nil, nilOption} {
		si, err := grpcbreaker.NewServerInterceptors(opt)
		assert.Nil(t, si)
		assert.EqualError(t, err, want)
	}
}
