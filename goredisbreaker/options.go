package goredisbreaker

import (
	"errors"
	"fmt"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// ErrInvalidOption is wrapped by the error [Instrument] returns for an
// invalid option; the full text names the option and what was wrong with it.
var ErrInvalidOption = errors.New("goredisbreaker: invalid option")

// keyPrefix starts the breaker names DefaultKey gives.
const keyPrefix = "redis:"

// DefaultKey is the default key function: "redis:" and the node's address
// as go-redis reports it (its Options().Addr), such as
// "redis:10.0.0.7:6379", so that a node's breaker stands apart from the
// HTTP and gRPC breakers of a shared registry and an exporter can tell
// them apart. A Sentinel failover client (redis.NewFailoverClient)
// reports "FailoverClient" whatever master it talks to: give it a name of
// its own with [WithKey] when a program has more than one.
func DefaultKey(addr string) string { return keyPrefix + addr }

// Option configures [Instrument].
type Option func(*options)

type options struct {
	registry   *breaker.Registry
	key        func(addr string) string
	acceptable srebreaker.Acceptable
	keyed      func(key string) breaker.Breaker // the registry's lookup of a name from outside
}

// newOptions applies opts over the defaults and validates them.
func newOptions(opts []Option) (*options, error) {
	o := &options{registry: breaker.DefaultRegistry(), key: DefaultKey, acceptable: DefaultAcceptable}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: a nil Option was given", ErrInvalidOption)
		}
		opt(o)
	}
	switch {
	case o.registry == nil:
		return nil, fmt.Errorf("%w: WithRegistry(nil): registry must not be nil", ErrInvalidOption)
	case o.key == nil:
		return nil, fmt.Errorf("%w: WithKey(nil): key function must not be nil", ErrInvalidOption)
	case o.acceptable == nil:
		return nil, fmt.Errorf("%w: WithAcceptable(nil): acceptable must not be nil", ErrInvalidOption)
	}
	o.keyed = serverside.Keyed(o.registry)
	return o, nil
}

// WithRegistry sets the registry the breakers come from, one per node key.
// Default [breaker.DefaultRegistry], which httpbreaker and grpcbreaker also
// use by default, so that one exporter reports every breaker of the
// program. Give a registry of your own for breakers with other options
// ([breaker.NewRegistry]'s, or [breaker.Registry.Configure] per key). It
// must not be nil.
//
// A Cluster's nodes come and go with resharding and failover: the registry
// keeps at most [breaker.DefaultLimit] breakers unless
// [breaker.Registry.SetLimit] says otherwise, so their number stays bounded.
func WithRegistry(r *breaker.Registry) Option {
	return func(o *options) { o.registry = r }
}

// WithKey sets the function that names a node's breaker from its address,
// as go-redis reports it (host:port, or "FailoverClient" for a Sentinel
// failover client). Default [DefaultKey]. It is called once per node
// client, when the hook is added, not per command. It must not be nil.
func WithKey(key func(addr string) string) Option {
	return func(o *options) { o.key = key }
}

// WithAcceptable sets the function that decides whether a command's error
// still counts as a success: a reply that says the server is healthy but
// the command was wrong, for example. Default [DefaultAcceptable]; a
// function of your own can call it for the errors it has no opinion on.
//
// It is asked only about errors that are not settled before: a nil error
// and redis.Nil (a missing key) always count as successes, and a command
// whose caller canceled its context, or that ran on a closed client,
// counts as neither. It may be called from many goroutines at once. It
// must not be nil.
func WithAcceptable(acceptable srebreaker.Acceptable) Option {
	return func(o *options) { o.acceptable = acceptable }
}
