package httpbreaker_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/httpbreaker"
)

// An option of one side is not an option of the other: passing it to the
// other's constructor does not compile.
func TestOption_sides(t *testing.T) {
	for name, opt := range map[string]any{
		"WithRegistry":   httpbreaker.WithRegistry(breaker.MustNewRegistry()),
		"WithKey":        httpbreaker.WithKey(func(*http.Request) string { return "k" }),
		"WithClassifier": httpbreaker.WithClassifier(httpbreaker.ClientClassifier),
	} {
		assert.Implements(t, (*httpbreaker.TransportOption)(nil), opt, name)
		assert.Implements(t, (*httpbreaker.HandlerOption)(nil), opt, name)
	}
	for name, opt := range map[string]any{
		"WithFallback": httpbreaker.WithFallback(nil),
	} {
		assert.Implements(t, (*httpbreaker.TransportOption)(nil), opt, name)
		_, ok := opt.(httpbreaker.HandlerOption)
		assert.False(t, ok, "%s is a HandlerOption", name)
	}
	for name, opt := range map[string]any{
		"WithRetryAfter":        httpbreaker.WithRetryAfter(time.Second),
		"WithCriticalityPolicy": httpbreaker.WithCriticalityPolicy(httpbreaker.IgnoreHeader()),
	} {
		assert.Implements(t, (*httpbreaker.HandlerOption)(nil), opt, name)
		_, ok := opt.(httpbreaker.TransportOption)
		assert.False(t, ok, "%s is a TransportOption", name)
	}
}

// An invalid option's error wraps ErrInvalidOption and names the option
// and its value.
func TestNewHandler_invalidOptionNamed(t *testing.T) {
	_, err := httpbreaker.NewHandler(http.NotFoundHandler(), httpbreaker.WithRetryAfter(-3*time.Second))
	assert.True(t, errors.Is(err, httpbreaker.ErrInvalidOption))
	assert.ErrorContains(t, err, "WithRetryAfter(-3s)")
}

func TestNewTransport_nilOption(t *testing.T) {
	var nilOption httpbreaker.Option
	for _, opt := range []httpbreaker.TransportOption{nil, nilOption} {
		tr, err := httpbreaker.NewTransport(nil, opt)
		assert.Nil(t, tr)
		assert.ErrorIs(t, err, httpbreaker.ErrInvalidOption)
		assert.EqualError(t, err, "httpbreaker: invalid option: a nil option was given")
	}
	h, err := httpbreaker.NewHandler(http.NotFoundHandler(), nil)
	assert.Nil(t, h)
	assert.EqualError(t, err, "httpbreaker: invalid option: a nil option was given")
}
