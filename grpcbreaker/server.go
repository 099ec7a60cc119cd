package grpcbreaker

import (
	"context"

	"google.golang.org/grpc"
)

// UnaryServerInterceptor returns an interceptor that sheds load: it runs a
// unary handler only if the breaker for the call's key admits it, and
// records how the handler ended. Set it inline with grpc.UnaryInterceptor or
// grpc.ChainUnaryInterceptor:
//
//	srv := grpc.NewServer(grpc.UnaryInterceptor(grpcbreaker.UnaryServerInterceptor()))
//
// The breaker comes from [breaker.DefaultRegistry] unless [WithRegistry]
// says otherwise, under the key [DefaultKey] gives: "server:" and the full
// method, apart from the keys of the process's clients.
//
// A call is served at the level the [CriticalityPolicy] gives it: by
// default [criticality.Default] for every call, whatever its
// [CriticalityKey] metadata claims, since any client may send it; with
// [TrustMetadata] the metadata's level, capped; with [LevelFunc] the
// server's choice. When the breaker sheds, it sheds the lowest levels
// first. The handler gets the level in its context (see
// [criticality.From]), so that the client interceptors of the calls
// it makes pass it on, and CriticalityKey metadata in its context's
// incoming metadata says that level, or is removed for the default: a
// handler that forwards incoming metadata (a proxy) does not pass on a
// claim the policy did not believe.
//
// A shed call fails with status code Unavailable and a message that says
// the server's breaker shed it; the breaker's failure reasons are not sent
// to the client. A call whose client canceled it counts as neither. A panic
// in the handler is recorded as a failure and raised again. The constructor
// panics, with an error wrapping [ErrInvalidOption] that names the option,
// when an option is invalid.
func UnaryServerInterceptor(opts ...Option) grpc.UnaryServerInterceptor {
	o := mustOptions(serverSide, opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, p, err := serverAdmit(o.get(o.key(ctx, "", info.FullMethod)), ctx, o.criticality, info.FullMethod)
		if err != nil {
			return nil, err
		}
		var resp any
		if guard(p, func() { resp, err = handler(ctx, req) }) {
			panic(nil) // raised again: see guard
		}
		o.record(p, ctx, err)
		return resp, err
	}
}

// StreamServerInterceptor is [UnaryServerInterceptor] for streaming
// handlers: it records how the handler ended, once it returns. Set it
// inline with grpc.StreamInterceptor or grpc.ChainStreamInterceptor; it
// panics as UnaryServerInterceptor does when an option is invalid. With
// grpc.UnknownServiceHandler, the full methods it sees are whatever clients
// send: the registry keeps at most [breaker.DefaultLimit] breakers (change
// it with [breaker.Registry.SetLimit]), and a [WithKey] that maps them to a
// bounded set keeps one breaker per method.
func StreamServerInterceptor(opts ...Option) grpc.StreamServerInterceptor {
	o := mustOptions(serverSide, opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		ctx, p, err := serverAdmit(o.get(o.key(ctx, "", info.FullMethod)), ctx, o.criticality, info.FullMethod)
		if err != nil {
			return err
		}
		if ctx != ss.Context() {
			ss = &levelStream{ServerStream: ss, ctx: ctx}
		}
		if guard(p, func() { err = handler(srv, ss) }) {
			panic(nil) // raised again: see guard
		}
		o.record(p, ctx, err)
		return err
	}
}
