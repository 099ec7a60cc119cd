package serverside

import (
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/registryhook"
)

// Side is which of a transport's constructors applies its options: a
// client's or a server's, each refusing the options of the other.
type Side int8

// The sides.
const (
	ClientSide Side = iota
	ServerSide
)

// Breakers checks the options every transport has, for both sides, and
// returns the function its breakers come from: get when a test set one,
// otherwise the registry's lookup of a name from outside (Keyed), whose
// breakers the registry's limit bounds without ever forgetting the
// program's own names. When registry is nil, or the transport's key
// function is (hasKey false), it returns what is wrong instead, naming
// the option, as the text that follows the transport's ErrInvalidOption.
func Breakers(registry *breaker.Registry, get func(key string) breaker.Breaker,
	hasKey bool) (_ func(key string) breaker.Breaker, invalid string) {
	switch {
	case registry == nil:
		return nil, "WithRegistry(nil): registry must not be nil"
	case !hasKey:
		return nil, "WithKey(nil): key function must not be nil"
	case get != nil:
		return get, ""
	}
	return Keyed(registry), ""
}

// Keyed returns registry's lookup of names that come from outside (see
// package registryhook).
func Keyed(registry *breaker.Registry) func(key string) breaker.Breaker {
	keyed := registryhook.Keyed.(func(*breaker.Registry, string) breaker.Breaker)
	return func(key string) breaker.Breaker { return keyed(registry, key) }
}
