package grpcbreaker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/srebreaker/srebreaker/breaker"
)

// ErrInvalidOption is wrapped by the error an interceptor constructor
// returns for an invalid option; the full text names the option and what
// was wrong with it.
var ErrInvalidOption = errors.New("grpcbreaker: invalid option")

// DefaultFailureCodes are the status codes that count as a failure unless
// [WithFailureCodes] says otherwise: the codes that say the server is
// down, overloaded, too slow or broken, rather than that the request was
// wrong. A copy; changing it changes nothing.
func DefaultFailureCodes() []codes.Code {
	return []codes.Code{
		codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted,
		codes.Internal, codes.DataLoss, codes.Unknown,
	}
}

// maxCode is the largest status code gRPC defines.
const maxCode = codes.Unauthenticated

// Registry gives the breaker for a key, the same breaker for the same key
// every time. *[breaker.Registry] implements it; another implementation can
// wrap one, to observe or override what it hands out.
type Registry interface {
	Get(key string) breaker.Breaker
}

// KeyFunc names the breaker for a call: calls with the same key share a
// breaker. target is the client connection's target (as given to
// grpc.NewClient), empty on the server; fullMethod is
// "/package.Service/Method". It may be called from many goroutines at once.
type KeyFunc func(ctx context.Context, target, fullMethod string) string

// DefaultKey is the default [KeyFunc]: target and full method joined, such
// as "dns:///api.example.com:443/pkg.Service/Method" on a client and
// "/pkg.Service/Method" on a server.
func DefaultKey(_ context.Context, target, fullMethod string) string {
	return target + fullMethod
}

// Option configures an interceptor.
type Option func(*options)

type options struct {
	registry Registry
	key      KeyFunc
	codes    []codes.Code // as given, for the error text
	failures uint32       // bit c set: code c is a failure
}

// newOptions applies opts over the defaults and validates them.
func newOptions(opts []Option) (*options, error) {
	o := &options{registry: breaker.NewRegistry(), key: DefaultKey, codes: DefaultFailureCodes()}
	for _, opt := range opts {
		opt(o)
	}
	if r, ok := o.registry.(*breaker.Registry); ok && r == nil {
		o.registry = nil
	}
	switch {
	case o.registry == nil:
		return nil, fmt.Errorf("%w: WithRegistry(nil): registry must not be nil", ErrInvalidOption)
	case o.key == nil:
		return nil, fmt.Errorf("%w: WithKey(nil): key function must not be nil", ErrInvalidOption)
	case len(o.codes) == 0:
		return nil, fmt.Errorf("%w: WithFailureCodes(): at least one code is needed", ErrInvalidOption)
	}
	for _, c := range o.codes {
		if c == codes.OK || c > maxCode {
			return nil, fmt.Errorf("%w: WithFailureCodes(%s): %s cannot be a failure code; valid codes are %s to %s",
				ErrInvalidOption, joinCodes(o.codes), c, codes.Canceled, maxCode)
		}
		o.failures |= 1 << c
	}
	return o, nil
}

func joinCodes(cs []codes.Code) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

// WithRegistry sets the registry the breakers come from, one per key,
// usually a *[breaker.Registry], so that they can be shared with other code
// or configured with [breaker.NewRegistry]'s options. Default: a new
// breaker.Registry with the default options for each interceptor, whose
// breakers no other code sees. It must not be nil.
func WithRegistry(r Registry) Option {
	return func(o *options) { o.registry = r }
}

// WithKey sets the function that names the breaker for a call. Default
// [DefaultKey]: one breaker per target and method on a client, per method
// on a server. Return the target alone for one breaker per server, or the
// service name for one per service. It must not be nil.
func WithKey(key KeyFunc) Option {
	return func(o *options) { o.key = key }
}

// WithFailureCodes sets the status codes that count as a failure, replacing
// [DefaultFailureCodes]; a call ending with any other code counts as a
// success, except Canceled, which counts as neither unless it is in the
// set. A call the caller canceled counts as neither whatever the set. At
// least one code is needed, and OK cannot be one.
func WithFailureCodes(failures ...codes.Code) Option {
	return func(o *options) { o.codes = append([]codes.Code(nil), failures...) }
}
