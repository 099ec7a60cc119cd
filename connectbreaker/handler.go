package connectbreaker

import (
	"context"
	"errors"
	"net/http"

	"connectrpc.com/connect"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/internal/admitted"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/drophook"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// HandlerInterceptor is a connect.Interceptor for handlers that sheds
// load: it runs a handler only if the breaker for the call's key admits
// it, and records how the handler ended, judged by its code, as a
// [ClientInterceptor] judges a call. Make one with [NewHandlerInterceptor]
// and give it to the handlers, with connect.WithInterceptors:
//
//	hi, err := connectbreaker.NewHandlerInterceptor()
//	...
//	mux.Handle(pingv1connect.NewPingServiceHandler(svc, connect.WithInterceptors(hi)))
//
// One handler serves the Connect, gRPC and gRPC-Web protocols, and so does
// the interceptor. The breaker comes from [breaker.DefaultRegistry] unless
// [WithRegistry] says otherwise, under the key [DefaultKey] gives:
// "server:" and the procedure, apart from the keys of the process's
// clients. A stream is recorded when its handler returns.
//
// A call is served at the level the [CriticalityPolicy] gives it: by
// default [criticality.Default] for every call, whatever its
// [CriticalityHeader] claims, since any client may send it; with
// [TrustHeader] the header's level, capped; with [LevelFunc] the server's
// choice. When the breaker sheds, it sheds the lowest levels first. The
// handler gets the level in its context (see [criticality.From]), so that
// the clients it calls through pass it on, and the CriticalityHeader of
// the request it gets says that level (a claim of it alone is left as it
// is), or is removed for the default: a handler that forwards headers
// does not pass on a claim the policy did not believe.
//
// A shed call fails with code unavailable and a message that says the
// server's breaker shed it; the breaker's failure reasons are not sent to
// the client. Its error carries the interceptor's advice on retrying
// ("no" once most of what it sheds is already a retry, as the
// [AttemptHeader] or gRPC's grpc-previous-rpc-attempts numbers them;
// "later" otherwise) in a [RetryHeader], a grpc-retry-pushback-ms trailer
// (-1 or 1000 ms) and a google.rpc.ErrorInfo detail of [ErrorDomain], which
// this package's, grpcbreaker's and gRPC's own clients read. A failure of
// a call served while the breaker sheds carries the advice too, so that a
// client's breaker leaves it out of its counts (see [ShedByServer]). So
// does the failure of a call whose handler made a guarded call with its
// context (through a [ClientInterceptor], grpcbreaker, httpbreaker's
// Transport, sqlbreaker, goredisbreaker, or a breaker's methods that take
// a context) that failed, was dropped, or was answered by a shedding
// server: such a failure counts as neither on the interceptor's breaker,
// since the breaker of that call, nearer the failure, throttles it. While
// the calls it served have failed, several in a row with no success since,
// the interceptor serves the 40th call in a row its breaker drops all the
// same, as a probe whose outcome the breaker does not see; once a probe
// succeeds, it serves the calls the breaker drops until one fails. This is
// the policy of grpcbreaker's server interceptors and httpbreaker's
// Handler.
//
// A call the breaker admits then passes the interceptor's overload limit
// (on by default; see [WithOverloadLimit] and docs/guide/overload.md): it
// lets a learned number of calls into the handlers at once and queues the
// rest by level, the highest going in first. While calls arrive faster
// than the handlers serve them, the queue is kept short and a call it has
// no room for, the lowest level's first, fails at once with unavailable,
// the advice, [OverloadHeader] and an ErrorInfo detail of reason
// "OVERLOADED" (see [Overloaded]); a [ClientInterceptor] counts it as a
// failure. A stream holds no room once its handler has begun.
//
// A call whose client went away (its context canceled) counts as neither,
// whatever code its handler returned.
// A panic in the handler is recorded as a failure and raised again. Given
// to a client, it fails every call with an error wrapping [ErrWrongSide].
//
// A HandlerInterceptor is safe for concurrent use by multiple goroutines.
type HandlerInterceptor struct {
	o        *options
	memories serverside.Memories // per key
}

var _ connect.Interceptor = (*HandlerInterceptor)(nil)

// NewHandlerInterceptor returns a HandlerInterceptor with opts. It
// returns an error wrapping [ErrInvalidOption] that names the option when
// one is invalid.
func NewHandlerInterceptor(opts ...HandlerOption) (*HandlerInterceptor, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt.applyHandler(o)
	}
	if err := o.validate(serverside.ServerSide); err != nil {
		return nil, err
	}
	return &HandlerInterceptor{o: o}, nil
}

// MustNewHandlerInterceptor is like [NewHandlerInterceptor] but panics,
// with the error NewHandlerInterceptor would return, when an option is
// invalid: for options written in code.
func MustNewHandlerInterceptor(opts ...HandlerOption) *HandlerInterceptor {
	hi, err := NewHandlerInterceptor(opts...)
	if err != nil {
		panic(err)
	}
	return hi
}

// WrapUnary implements connect.Interceptor: it guards a handler's unary
// calls.
func (h *HandlerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	last := new(lastKey)
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		spec := req.Spec()
		if spec.IsClient {
			return nil, wrongSide(handlerOnClient)
		}
		var peer connect.Peer
		if h.o.criticality.readPeer { // read only for a LevelFunc: it costs a copy
			peer = req.Peer()
		}
		ctx, m, ov, p, slot, advice, err := h.admit(last, ctx, spec, peer, req.Header())
		if err != nil {
			return nil, err
		}
		slot.Hold(m)   // no room held while the handler waits on a guarded call
		p = m.Watch(p) // nor is it out for the breaker: see chain.Mark.Watch
		failed := true // till the handler returns: a panic
		defer func() { slot.Release(!failed) }()
		var resp connect.AnyResponse
		if admitted.Run(p, func() { resp, err = next(ctx, req) }) {
			panic(nil) // raised again: see admitted.Run
		}
		failure, fromDependency := h.finish(ov, p, ctx, m, err)
		failed = failure || fromDependency || ctx.Err() != nil // a call its client left ended early
		if failure && advice != "" || fromDependency {
			return resp, failureAnswer(err, serverside.DependencyAdvice(advice))
		}
		return resp, err
	}
}

// WrapStreamingHandler implements connect.Interceptor: it guards a
// handler's streams, and records each when the handler returns.
func (h *HandlerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	last := new(lastKey)
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, m, ov, p, slot, advice, err := h.admit(last, ctx, conn.Spec(), conn.Peer(), conn.RequestHeader())
		if err != nil {
			return err
		}
		// A stream holds no room in the overload limit: it may last as
		// long as its client likes. The limit orders and bounds its start.
		slot.Release(false)
		p = m.Watch(p) // not out for the breaker while the handler waits on a guarded call
		if admitted.Run(p, func() { err = next(ctx, conn) }) {
			panic(nil) // raised again: see admitted.Run
		}
		if failure, fromDependency := h.finish(ov, p, ctx, m, err); failure && advice != "" || fromDependency {
			return failureAnswer(err, serverside.DependencyAdvice(advice))
		}
		return err
	}
}

// WrapStreamingClient implements connect.Interceptor: given to a client, a
// HandlerInterceptor fails its streams with an error wrapping
// [ErrWrongSide], without sending them.
func (h *HandlerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		return &failedConn{StreamingClientConn: next(ctx, spec), err: wrongSide(handlerOnClient)}
	}
}

// admit asks the breaker of the call's key about an incoming call, at the
// level the policy gives it (peer is the call's for a LevelFunc, zero
// otherwise), and returns the memory of that key too; last
// is the memory of the function the call goes through. The context
// returned for a call served holds its chain.Mark, returned too, and
// carries the level when it is not the default; header's
// CriticalityHeader is made to say it. A call the breaker drops
// is served all the same when it is a probe (see serverside.Overload.Probe),
// with the promise serverside.Probe{}; otherwise its error is the shed
// answer. For a call served, advice is what its failure is to carry, or
// "" when the breaker is not shedding. A call whose client went away
// before it was admitted gets its context's error, and records nothing.
func (h *HandlerInterceptor) admit(last *lastKey, ctx context.Context, spec connect.Spec, peer connect.Peer,
	header http.Header) (_ context.Context, _ *chain.Mark, ov *serverside.Overload, _ srebreaker.Promise,
	slot serverside.Slot, advice string, _ error) {
	attempt := AttemptOf(header)
	key, k := h.o.keyOf(last, ctx, "", spec.Procedure)
	switch {
	case k == nil:
		ov = h.memories.Of(key)
	case k.ov.Load() != nil:
		ov = k.ov.Load()
	default:
		ov = h.memories.Of(key)
		k.ov.Store(ov)
	}
	b := h.o.get(key)
	c := h.o.criticality.Level(ctx, spec, peer, header)
	setLevelHeader(header, c)
	var (
		p   srebreaker.Promise
		err error
	)
	if c == criticality.Default {
		if p, err = b.Allow(); err != nil {
			drophook.Dropped(b, ctx, err)
		}
	} else {
		if cerr := ctx.Err(); cerr != nil {
			return ctx, nil, ov, nil, slot, "", contextError(cerr)
		}
		p, err = serverside.AllowAt(b, ctx, c)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return ctx, nil, ov, nil, slot, "", contextError(err)
		}
	}
	probe := false
	if err != nil {
		if probe = ov.Probe(); !probe {
			return ctx, nil, ov, nil, slot, "", shedAnswer(err, ov.Shedding(attempt))
		}
		p = serverside.Probe{}
	}
	if h.o.limit { // a probe too takes its room: it is the server's work
		// A call that waits for room takes its promise again once let in:
		// the wait is the server's load, no hang of its dependency. Not
		// served, a call says nothing of the dependency: its promise is
		// given up.
		slot, p, err = ov.Limiter(b, h.o.clock).AcquireFor(ctx, c, b, p, probe)
		switch {
		case err == nil:
		case err == serverside.ErrOverloaded:
			return ctx, nil, ov, nil, slot, "", overloadAnswer(ov.Rejecting(attempt))
		case errors.Is(err, breaker.ErrServiceUnavailable): // dropped by the breaker as it was let in
			return ctx, nil, ov, nil, slot, "", shedAnswer(err, ov.Shedding(attempt))
		default:
			return ctx, nil, ov, nil, slot, "", contextError(err) // the client has gone
		}
	}
	ctx, m := chain.With(ctx, c) // made only for a call served: one shed or rejected costs none
	if probe {
		return ctx, m, ov, p, slot, ov.Advice(), nil
	}
	return ctx, m, ov, p, slot, ov.Served(attempt), nil
}

// finish records how a served call ended on p and in ov, and reports
// whether it failed, or failed for a guarded call its handler made in ctx
// that failed, m that context's Mark: such a failure is recorded as
// neither (see serverside.Chained), and its answer is to carry the advice.
func (h *HandlerInterceptor) finish(ov *serverside.Overload, p srebreaker.Promise, ctx context.Context, m *chain.Mark,
	err error) (failure, fromDependency bool) {
	x, fromDependency := serverside.Chained(serverside.Gone(ctx, h.o.classify(ctx, err)), m)
	recordAs(p, x, err)
	_, isProbe := p.(serverside.Probe)
	ov.Finished(x, isProbe)
	return x == failed, fromDependency
}
