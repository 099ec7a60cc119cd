package grpcbreaker

import (
	"context"
	"io"
	"sync"

	"github.com/srebreaker/srebreaker/internal/admitted"
	"github.com/srebreaker/srebreaker/internal/chain"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Unary returns an interceptor that starts a unary call only if the
// breaker for its key admits it, and records how the call ended. Set it
// with grpc.WithUnaryInterceptor or grpc.WithChainUnaryInterceptor:
//
//	cc, err := grpc.NewClient(target, creds,
//		grpc.WithUnaryInterceptor(interceptors.Unary()))
//
// The breaker comes from [breaker.DefaultRegistry] unless [WithRegistry]
// says otherwise, under the key [DefaultKey] gives: target and method.
//
// The call's context may carry a [criticality.Level] (see
// [criticality.With]): the breaker then drops the lowest levels
// first, and the interceptor sends the level in the [CriticalityKey]
// metadata, unless it is the default.
//
// A call that is a retry, by the attempt number its context carries (see
// [retry.WithAttempt], set by [retry.Policy.Do]) or by go-grpc-middleware's
// retry metadata, takes the retry from its breaker's budget first (see
// [retry.Budget]); when the budget is spent it fails with status code
// Unavailable and an error matching [retry.ErrBudgetSpent], without being
// sent. A retry carries its number in the [PreviousAttemptsKey] metadata.
// A call that fails with a [PushbackTrailer] trailer returns an error, of the
// same status, that package retry reads the server's pushback from.
//
// A dropped call fails with status code Unavailable and a message that
// names the breaker and its last failure reasons; its error matches
// [breaker.ErrServiceUnavailable]. When the call's context is already done,
// the interceptor returns its status (Canceled or DeadlineExceeded) and
// records nothing. A panic in the invoker is recorded as a failure and
// raised again.
func (c *ClientInterceptors) Unary() grpc.UnaryClientInterceptor {
	o := c.o
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		b := o.get(o.keyOf(ctx, endpoint(cc.Target()), method))
		if err := takeRetry(ctx, b); err != nil {
			return err
		}
		p, err := b.AllowCtx(ctx)
		if err != nil {
			return clientShed(err)
		}
		ctx = withOutgoingAttempt(withOutgoingCriticality(ctx))
		var trailer metadata.MD
		callOpts = trailerOption(callOpts, &trailer)
		if admitted.Run(p, func() {
			away := chain.Leave(ctx) // see package chain
			defer away.Return()
			err = invoker(ctx, method, req, reply, cc, callOpts...)
		}) {
			panic(nil) // raised again: see admitted.Run
		}
		o.recordClient(b, p, ctx, err)
		return withPushback(err, trailer)
	}
}

// Stream returns an interceptor that opens a stream only if the breaker
// for its key admits it, and records how the stream ended, exactly once:
// when RecvMsg returns io.EOF (a success) or an error (as its status code
// says), when SendMsg returns an error other than io.EOF, when the one
// response of a stream without server streaming arrives, or, if the
// caller abandons the stream first, when the call's context is done
// (canceled: neither; past its deadline: a DeadlineExceeded failure). Set
// it inline with grpc.WithStreamInterceptor or
// grpc.WithChainStreamInterceptor.
//
// A stream with server streaming (a server stream or a bidirectional one)
// is marked answered when the server's header arrives, or its first
// message: the breaker no longer follows it as a call in flight, so that
// it may last as long as the caller likes (a watch, a chat) without being
// counted against the server as a call that does not come back; its end
// is still recorded as above. A stream that ends with a failure code
// after messages is a failure, one that the caller cancels is neither,
// however long either lasted. A server that streams nothing for long
// after it is called (a watch waiting for its first event) answers when
// it sends its header: until then the breaker cannot tell its stream from
// one that hangs. Such a server should send its header at once
// (grpc.SendHeader, or ServerStream.SendHeader). To notice the header
// before a message, the interceptor waits for it in a goroutine of its
// own, which ends when the header arrives or the stream ends.
//
// Breakers, keys, retries and their budget, drops, a context already done,
// and panics are handled as by [ClientInterceptors.Unary]:
// the error RecvMsg returns for a stream that ended with a
// [PushbackTrailer] trailer carries the server's pushback, as a unary
// call's does. A unary and a stream interceptor with the same options
// share the breaker of a target and method.
func (c *ClientInterceptors) Stream() grpc.StreamClientInterceptor {
	o := c.o
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
		streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err()
		}
		b := o.get(o.keyOf(ctx, endpoint(cc.Target()), method))
		if err := takeRetry(ctx, b); err != nil {
			return nil, err
		}
		p, err := b.AllowCtx(ctx)
		if err != nil {
			return nil, clientShed(err)
		}
		ctx = withOutgoingAttempt(withOutgoingCriticality(ctx))
		var cs grpc.ClientStream
		if admitted.Run(p, func() { cs, err = streamer(ctx, desc, cc, method, callOpts...) }) {
			panic(nil) // raised again: see admitted.Run
		}
		if err != nil {
			o.recordClient(b, p, ctx, err)
			return nil, err
		}
		s := &clientStream{ClientStream: cs, o: o, b: b, call: streamCall{p: p}, ctx: ctx, serverStreams: desc.ServerStreams}
		s.stop = context.AfterFunc(ctx, s.abandoned)
		if desc.ServerStreams {
			go s.awaitHeader()
		}
		return s, nil
	}
}

// clientStream notes when a stream is answered and when it ends, and
// records its outcome once.
type clientStream struct {
	grpc.ClientStream
	o             *options
	b             chain.Namer // the stream's breaker
	call          streamCall
	ctx           context.Context
	stop          func() bool // stops the context watch; set before the stream is handed out
	serverStreams bool
	ended         sync.Once // the outcome's recording, by whichever goroutine sees the end first
}

// end records the stream's outcome, the first time it is called. A call
// while another goroutine records it (the context's watch, as RecvMsg
// returns the cancel) waits for that record: once end returns, the
// outcome is recorded.
func (s *clientStream) end(err error) {
	s.ended.Do(func() {
		if p := s.call.take(); p != nil {
			s.stop()
			s.o.recordClient(s.b, p, s.ctx, err)
		}
	})
}

// awaitHeader marks the call answered when the server's header arrives.
// Header returns nil when the stream ended without one (a trailers-only
// answer, a failure): RecvMsg or the context then tells how it ended.
func (s *clientStream) awaitHeader() {
	if md, _ := s.ClientStream.Header(); md != nil {
		s.call.answer()
	}
}

// abandoned runs when the call's context is done before the stream was
// seen to end: canceled, the caller gave up; past its deadline, a failure.
func (s *clientStream) abandoned() {
	s.end(status.FromContextError(s.ctx.Err()).Err())
}

func (s *clientStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil && err != io.EOF { // io.EOF: the status is for RecvMsg to tell
		s.end(err)
	}
	return err
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	switch {
	case err == io.EOF:
		s.end(nil)
	case err != nil:
		s.end(err)
		// The stream has ended: its trailer is there to read.
		return withPushback(err, s.ClientStream.Trailer())
	case s.serverStreams:
		// A message: the header came before it.
		s.call.answer()
	default:
		// The one response of a stream without server streaming: it came
		// with an OK status.
		s.end(nil)
	}
	return err
}
