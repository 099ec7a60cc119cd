package grpcbreaker

// ClientInterceptors holds the interceptors of a client: [ClientInterceptors.Unary]
// and [ClientInterceptors.Stream], which share their options, and so the
// breaker of a target and method. Make one with [NewClientInterceptors]:
//
//	interceptors, err := grpcbreaker.NewClientInterceptors()
//	if err != nil {
//		return err
//	}
//	cc, err := grpc.NewClient(target, creds,
//		grpc.WithUnaryInterceptor(interceptors.Unary()),
//		grpc.WithStreamInterceptor(interceptors.Stream()))
//
// Its interceptors take their breakers from [breaker.DefaultRegistry]
// unless [WithRegistry] says otherwise, under the key [DefaultKey] gives:
// target and method. A ClientInterceptors and its interceptors are safe
// for concurrent use by multiple goroutines.
type ClientInterceptors struct {
	o *options
}

// NewClientInterceptors returns the interceptors of a client with opts. It
// returns an error wrapping [ErrInvalidOption], naming the option and its
// value, when an option is invalid or nil. An option that applies to a
// server only ([WithCriticalityPolicy]) does not compile here.
func NewClientInterceptors(opts ...Option) (*ClientInterceptors, error) {
	o, err := newOptions(func(o *options) bool {
		for _, opt := range opts {
			if opt == nil {
				return false
			}
			opt(o)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return &ClientInterceptors{o: o}, nil
}

// ServerInterceptors holds the interceptors of a server:
// [ServerInterceptors.Unary] and [ServerInterceptors.Stream], which share
// their options, and so the breaker of a method. Make one with
// [NewServerInterceptors]:
//
//	interceptors, err := grpcbreaker.NewServerInterceptors(
//		grpcbreaker.WithCriticalityPolicy(grpcbreaker.TrustMetadata(criticality.Critical)))
//	if err != nil {
//		return err
//	}
//	srv := grpc.NewServer(
//		grpc.UnaryInterceptor(interceptors.Unary()),
//		grpc.StreamInterceptor(interceptors.Stream()))
//
// Its interceptors take their breakers from [breaker.DefaultRegistry]
// unless [WithRegistry] says otherwise, under the key [DefaultKey] gives:
// "server:" and the full method, apart from the keys of the process's
// clients. A ServerInterceptors and its interceptors are safe for
// concurrent use by multiple goroutines.
type ServerInterceptors struct {
	o *options
	// ms are the memories of its keys (advice, probes, the overload
	// limit), one per key for its Unary and Stream interceptors alike.
	ms memories
}

// NewServerInterceptors returns the interceptors of a server with opts. It
// returns an error wrapping [ErrInvalidOption], naming the option and its
// value, when an option is invalid or nil.
func NewServerInterceptors(opts ...ServerOption) (*ServerInterceptors, error) {
	o, err := newOptions(func(o *options) bool {
		for _, opt := range opts {
			if f, ok := opt.(Option); opt == nil || ok && f == nil {
				return false
			}
			opt.server(o)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return &ServerInterceptors{o: o}, nil
}
