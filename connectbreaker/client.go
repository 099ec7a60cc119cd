package connectbreaker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"connectrpc.com/connect"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/admitted"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/drophook"
	"github.com/srebreaker/srebreaker/internal/serverside"
	"github.com/srebreaker/srebreaker/retry"
)

// ClientInterceptor is a connect.Interceptor for clients: it starts a call
// only if the breaker for the call's key admits it, and records how the
// call ended, judged by its code, whichever protocol the client speaks
// (Connect, gRPC or gRPC-Web). Make one with [NewClientInterceptor] and
// give it to the client:
//
//	ci, err := connectbreaker.NewClientInterceptor()
//	...
//	client := connect.NewClient[Req, Res](httpClient, url, connect.WithInterceptors(ci))
//
// The breaker comes from [breaker.DefaultRegistry] unless [WithRegistry]
// says otherwise, under the key [DefaultKey] gives: host and procedure.
//
// A call that ends with one of the failure codes (by default
// [DefaultFailureCodes]: unavailable, deadline_exceeded,
// resource_exhausted, internal, data_loss and unknown) counts as a
// failure, unless a server whose breaker sheds answered it
// ([ShedByServer]: that breaker, nearer to the dependency, throttles it
// alone); a call the caller canceled counts as neither, and so does
// canceled from the server; every other ending is a success. A call whose
// connection the server reset is a failure, although connect gives it
// code canceled. The code is
// the call's, wherever the protocol carries it: an HTTP status for a
// Connect unary call, the trailers of a 200 response for gRPC and
// gRPC-Web, the end-of-stream message for a Connect stream.
//
// A stream is recorded when it ends, by its final code: when Receive
// returns an error (io.EOF: a success), when Send returns an error other
// than io.EOF, or, for a stream the caller closes with CloseResponse
// before it ended, as the call's context says (canceled or none: neither;
// past its deadline: a failure). A stream that lasts (a watch) is a call
// out until then: give such procedures a breaker of their own ([WithKey]),
// since the breaker counts a call out for much longer than the
// procedure's calls take against the dependency (see
// [breaker.WithSlowCall]).
//
// The call's context may carry a [criticality.Level] (see
// [criticality.With]): the breaker then drops the lowest levels first, and
// the interceptor sends the level in the [CriticalityHeader], unless it is
// the default. A call that is a retry, by the attempt number its context
// carries (see [retry.WithAttempt], set by [retry.Policy.Do]), takes the
// retry from its breaker's budget first (see [retry.Budget]); when the
// budget is spent it fails with code unavailable and an error matching
// [retry.ErrBudgetSpent], without being sent. A retry carries its number
// in the [AttemptHeader]. A call whose server said when to retry, or not
// to (a grpc-retry-pushback-ms trailer, a [RetryHeader] of "no"), returns
// an error that package retry reads it from; its code is the call's.
//
// A dropped call fails with code unavailable and a message that names the
// breaker and its last failure reasons; its error matches
// [breaker.ErrServiceUnavailable]. When the call's context is already
// done, the interceptor returns its code (canceled or deadline_exceeded)
// and records nothing. A panic in the call is recorded as a failure and
// raised again. Given to a handler, it fails every call with an error
// wrapping [ErrWrongSide].
//
// A ClientInterceptor is safe for concurrent use by multiple goroutines.
type ClientInterceptor struct {
	o *options
}

var _ connect.Interceptor = (*ClientInterceptor)(nil)

// NewClientInterceptor returns a ClientInterceptor with opts. It returns an
// error wrapping [ErrInvalidOption] that names the option when one is
// invalid.
func NewClientInterceptor(opts ...ClientOption) (*ClientInterceptor, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt.applyClient(o)
	}
	if err := o.validate(serverside.ClientSide); err != nil {
		return nil, err
	}
	o.client = true
	return &ClientInterceptor{o: o}, nil
}

// MustNewClientInterceptor is like [NewClientInterceptor] but panics, with
// the error NewClientInterceptor would return, when an option is invalid:
// for options written in code.
func MustNewClientInterceptor(opts ...ClientOption) *ClientInterceptor {
	ci, err := NewClientInterceptor(opts...)
	if err != nil {
		panic(err)
	}
	return ci
}

// admit asks the breaker of a call to host and procedure about it, and
// takes a retry's budget first; last is the memory of the function the
// call goes through. It returns the breaker and the promise of an admitted
// call, or the error a call not made fails with.
func (c *ClientInterceptor) admit(last *lastKey, ctx context.Context, host, procedure string) (breaker.Breaker, srebreaker.Promise, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, contextError(err)
	}
	key, _ := c.o.keyOf(last, ctx, host, procedure)
	b := c.o.get(key)
	if retry.Attempt(ctx) > 1 {
		if err := retry.TakeFor(ctx, b); err != nil {
			return nil, nil, connect.NewError(connect.CodeUnavailable, &clientDrop{"connectbreaker: retry not made: ", err})
		}
	}
	var (
		p   srebreaker.Promise
		err error
	)
	if criticality.From(ctx) == criticality.Default {
		if p, err = b.Allow(); err != nil {
			drophook.Dropped(b, ctx, err)
		}
	} else {
		p, err = b.AllowCtx(ctx)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, contextError(err) // AllowCtx: the context ended after it was looked at
		}
		return nil, nil, connect.NewError(connect.CodeUnavailable, &clientDrop{"connectbreaker: call shed by the client's breaker: ", err})
	}
	return b, p, nil
}

// clientDrop is the cause of a call the client did not make: prefix and
// err's text, and it unwraps to err.
type clientDrop struct {
	prefix string
	err    error
}

func (e *clientDrop) Error() string { return e.prefix + e.err.Error() }
func (e *clientDrop) Unwrap() error { return e.err }

// WrapUnary implements connect.Interceptor: it guards a client's unary
// calls.
func (c *ClientInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	last := new(lastKey)
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		spec := req.Spec()
		if !spec.IsClient {
			return nil, wrongSide(clientOnHandler)
		}
		b, p, err := c.admit(last, ctx, req.Peer().Addr, spec.Procedure)
		if err != nil {
			return nil, err
		}
		sendLevelAndAttempt(ctx, req.Header())
		var resp connect.AnyResponse
		if admitted.Run(p, func() {
			away := chain.Leave(ctx) // see package chain
			defer away.Return()
			resp, err = next(ctx, req)
		}) {
			panic(nil) // raised again: see admitted.Run
		}
		if c.o.recordClient(b, p, ctx, err) == succeeded {
			return resp, err
		}
		return resp, withPushback(err)
	}
}

// WrapStreamingClient implements connect.Interceptor: it guards a client's
// streams, and records each when it ends.
func (c *ClientInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	last := new(lastKey)
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		b, p, err := c.admit(last, ctx, conn.Peer().Addr, spec.Procedure)
		if err != nil {
			return &failedConn{StreamingClientConn: conn, err: err}
		}
		sendLevelAndAttempt(ctx, conn.RequestHeader())
		return &clientConn{StreamingClientConn: conn, o: c.o, b: b, p: p, ctx: ctx}
	}
}

// WrapStreamingHandler implements connect.Interceptor: given to a handler,
// a ClientInterceptor fails its streams with an error wrapping
// [ErrWrongSide].
func (c *ClientInterceptor) WrapStreamingHandler(connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(context.Context, connect.StreamingHandlerConn) error { return wrongSide(clientOnHandler) }
}

// clientConn is an admitted stream: it records the stream's outcome once,
// when it ends. Its read side and its write side may each end it, at
// once: the promise is settled under once.
type clientConn struct {
	connect.StreamingClientConn
	o     *options
	b     chain.Namer // the stream's breaker
	p     srebreaker.Promise
	ctx   context.Context
	ended onceFlag
}

// end records the stream's outcome, the first time it is called, and
// returns err with what the server said about retrying.
func (s *clientConn) end(err error) error {
	if s.ended.set() {
		if s.o.recordClient(s.b, s.p, s.ctx, err) != succeeded {
			return withPushback(err)
		}
	}
	return err
}

func (s *clientConn) Send(msg any) error {
	var err error
	if admitted.Run(s.unlessEnded(), func() { err = s.StreamingClientConn.Send(msg) }) {
		panic(nil) // raised again: see admitted.Run
	}
	if err != nil && !errors.Is(err, io.EOF) { // io.EOF: the code is for Receive to tell
		return s.end(err)
	}
	return err
}

func (s *clientConn) Receive(msg any) error {
	var err error
	if admitted.Run(s.unlessEnded(), func() { err = s.StreamingClientConn.Receive(msg) }) {
		panic(nil) // raised again: see admitted.Run
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		s.end(nil)
		return err
	}
	return s.end(err)
}

// CloseResponse ends a stream the caller leaves before it ended: by the
// context's error, if the context is done (a deadline is a failure, a
// cancel neither), as neither otherwise.
func (s *clientConn) CloseResponse() error {
	err := s.StreamingClientConn.CloseResponse()
	if s.ended.set() {
		if cerr := s.ctx.Err(); cerr != nil {
			s.o.recordClient(s.b, s.p, s.ctx, contextError(cerr))
		} else {
			srebreaker.Ignore(s.p) // the caller gave up
		}
	}
	return err
}

// unlessEnded is the promise of s for a panic in a call of its conn: it
// records the panic unless the stream was recorded.
func (s *clientConn) unlessEnded() srebreaker.Promise { return unlessEnded{s} }

type unlessEnded struct{ s *clientConn }

func (u unlessEnded) Accept() {
	if u.s.ended.set() {
		u.s.p.Accept()
	}
}

func (u unlessEnded) Reject(reason string) {
	if u.s.ended.set() {
		u.s.p.Reject(reason)
	}
}

// failedConn is a stream not made: the breaker dropped it, its retry's
// budget was spent, or its context was done. Its Send and Receive return
// err, as connect's streams do for a call that failed before it began;
// nothing was sent.
type failedConn struct {
	connect.StreamingClientConn
	err error
}

func (c *failedConn) Send(any) error       { return c.err }
func (c *failedConn) Receive(any) error    { return c.err }
func (c *failedConn) CloseRequest() error  { return nil }
func (c *failedConn) CloseResponse() error { return nil }

// The headers of a stream not made: empty, as none came.
func (c *failedConn) ResponseHeader() http.Header  { return http.Header{} }
func (c *failedConn) ResponseTrailer() http.Header { return http.Header{} }

// onceFlag is set once.
type onceFlag struct{ b atomic.Bool }

// set sets f and reports whether it was not set before.
func (f *onceFlag) set() bool { return f.b.CompareAndSwap(false, true) }
