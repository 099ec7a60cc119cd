package grpcbreaker

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/admitted"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// Unary returns an interceptor that sheds load: it runs a unary handler
// only if the breaker for the call's key admits it, and records how the
// handler ended. Set it with grpc.UnaryInterceptor or
// grpc.ChainUnaryInterceptor:
//
//	srv := grpc.NewServer(grpc.UnaryInterceptor(interceptors.Unary()))
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
// incoming metadata says that level (a claim of it alone is left as it
// is), or is removed for the default: a handler that forwards incoming
// metadata (a proxy) does not pass on a claim the policy did not believe.
//
// A shed call fails with status code Unavailable and a message that says
// the server's breaker shed it; the breaker's failure reasons are not sent
// to the client. Its status carries a google.rpc.ErrorInfo detail of
// [ErrorDomain] and its trailer a [PushbackTrailer] with the interceptor's
// advice on retrying: -1, don't retry, once most of what it sheds is
// already a retry (as the grpc-previous-rpc-attempts metadata numbers
// them), 1000 ms otherwise. A failure of a call served while the breaker
// sheds carries the detail too, so that a client interceptor leaves it out
// of its own breaker's counts (see [ShedByServer]). So does the failure of
// a call whose handler made a guarded call with its context (through the
// client interceptors, httpbreaker's Transport, connectbreaker,
// sqlbreaker, goredisbreaker, or a breaker's methods that take a context)
// that failed, was dropped, or was answered by a shedding server: such a
// failure counts as neither on the interceptor's breaker, since the
// breaker of that call, nearer the failure, throttles it. While the calls it
// served have failed, several in a row with no success since, the
// interceptor serves the 40th call in a row its breaker drops all the
// same, as a probe whose outcome the breaker does not see; once a probe
// succeeds, it serves the calls the breaker drops until one fails.
//
// A call the breaker admits then passes the interceptors' overload limit
// (on by default; see [WithOverloadLimit] and docs/guide/overload.md): it
// lets a learned number of calls into the handlers at once and queues the
// rest by level, the highest going in first. While calls arrive faster
// than the handlers serve them, the queue is kept short and a call it has
// no room for, the lowest level's first, fails at once with Unavailable,
// an ErrorInfo detail of reason "OVERLOADED" and the pushback trailer
// (see [Overloaded]); the client interceptors count it as a failure. A
// stream holds no room once its handler has begun.
//
// A call whose client canceled it counts as neither, whatever code its
// handler returned. A panic in the
// handler is recorded as a failure and raised again.
func (s *ServerInterceptors) Unary() grpc.UnaryServerInterceptor {
	o := s.o
	ms := &s.ms
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		attempt := AttemptOf(ctx)
		ctx, m, ov, p, slot, advice, err := ms.admit(o, ctx, info.FullMethod, attempt)
		if err != nil {
			setTrailer(ctx, pushback(advice, true))
			return nil, err
		}
		slot.Hold(m)   // no room held while the handler waits on a guarded call
		p = m.Watch(p) // nor is it out for the breaker: see chain.Mark.Watch
		failed := true // till the handler returns: a panic
		defer func() { slot.Release(!failed) }()
		var resp any
		if admitted.Run(p, func() { resp, err = handler(ctx, req) }) {
			panic(nil) // raised again: see admitted.Run
		}
		failure, fromDependency := finish(ov, o, p, ctx, m, err)
		failed = failure || fromDependency || ctx.Err() != nil // a call its client left ended early
		if failure && advice != "" || fromDependency {
			advice = serverside.DependencyAdvice(advice)
			err = failureAnswer(err, advice)
			setTrailer(ctx, pushback(advice, false))
		}
		return resp, err
	}
}

// Stream is [ServerInterceptors.Unary] for streaming handlers: it records
// how the handler ended, once it returns: its status code, a panic, or a
// client that canceled. A handler with server streaming is marked
// answered when it first sends its header or a message: the breaker no
// longer follows it as a call in flight, so that its stream may last as
// long as its client likes (a watch, a chat) without being counted against
// the server as a call that does not come back; how it ends is still
// recorded when it returns, a failure or a panic after messages included.
// A handler that streams nothing for long after it is called should send
// its header at once (ServerStream.SendHeader): until then its stream is
// out, and counts against the server once out for much longer than the
// method's calls take. Set it with grpc.StreamInterceptor or
// grpc.ChainStreamInterceptor. With grpc.UnknownServiceHandler, the full
// methods it sees are whatever clients send: the registry keeps at most
// [breaker.DefaultLimit] breakers (change it with
// [breaker.Registry.SetLimit]), and a [WithKey] that maps them to a
// bounded set keeps one breaker per method.
func (s *ServerInterceptors) Stream() grpc.StreamServerInterceptor {
	o := s.o
	ms := &s.ms
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		attempt := AttemptOf(ctx)
		ctx, m, ov, p, slot, advice, err := ms.admit(o, ctx, info.FullMethod, attempt)
		if err != nil {
			if md := pushback(advice, true); md != nil {
				ss.SetTrailer(md)
			}
			return err
		}
		// A stream holds no room in the overload limit: it may last as
		// long as its client likes. The limit orders and bounds its start.
		slot.Release(false)
		p = m.Watch(p) // not out for the breaker while the handler waits on a guarded call
		ss = &levelStream{ServerStream: ss, ctx: ctx}
		guarded := p
		var call *streamCall
		if info.IsServerStream {
			call = &streamCall{p: p}
			ss, guarded = &answerStream{ServerStream: ss, call: call}, call
		}
		if admitted.Run(guarded, func() { err = handler(srv, ss) }) {
			panic(nil) // raised again: see admitted.Run
		}
		if call != nil {
			p = call.take() // the promise of the outcome, if the handler answered
		}
		if failure, fromDependency := finish(ov, o, p, ctx, m, err); failure && advice != "" || fromDependency {
			advice = serverside.DependencyAdvice(advice)
			err = failureAnswer(err, advice)
			if md := pushback(advice, false); md != nil {
				ss.SetTrailer(md)
			}
		}
		return err
	}
}

// admit asks the breaker for the call's key about an incoming call, as
// serverAdmit does, and returns the memory of that key too. A call the
// breaker drops is served all the same when it is a probe (see
// serverside.Overload.Probe), with the promise serverside.Probe{}, once it
// has its room in the overload limit like any call; otherwise its error carries
// the interceptor's advice, which admit returns too, for the trailer (""
// for a call whose client has gone). For a call served, advice is what its failure is to carry,
// or "" when the breaker is not shedding, and the context returned is the
// one to serve it in, with its chain.Mark (servedContext).
func (ms *memories) admit(o *options, ctx context.Context, fullMethod string, attempt int) (_ context.Context,
	_ *chain.Mark, ov *serverside.Overload, _ srebreaker.Promise, slot serverside.Slot, advice string, _ error) {
	key := o.keyOf(ctx, "", fullMethod)
	ov = ms.Of(key)
	b := o.get(key)
	level, claim, p, err := serverAdmit(b, ctx, o.criticality, fullMethod)
	probe := false
	if err != nil {
		var shed *shedError
		if !errors.As(err, &shed) {
			return ctx, nil, ov, nil, slot, "", err // the client has gone
		}
		if probe = ov.Probe(); !probe {
			advice = ov.Shedding(attempt)
			shed.advise(advice)
			return ctx, nil, ov, nil, slot, advice, shed
		}
		p = serverside.Probe{}
	}
	if o.limit { // a probe too takes its room: it is the server's work
		// A call that waits for room takes its promise again once let in:
		// the wait is the server's load, no hang of its dependency. Not
		// served, a call says nothing of the dependency: its promise is
		// given up.
		slot, p, err = ov.Limiter(b, o.clock).AcquireFor(ctx, level, b, p, probe)
		switch {
		case err == nil:
		case err == serverside.ErrOverloaded:
			advice = ov.Rejecting(attempt)
			return ctx, nil, ov, nil, slot, advice, overloadedError(advice)
		case errors.Is(err, breaker.ErrServiceUnavailable): // dropped by the breaker as it was let in
			advice = ov.Shedding(attempt)
			shed := &shedError{msg: serverShedMsg, err: err}
			shed.advise(advice)
			return ctx, nil, ov, nil, slot, advice, shed
		default:
			return ctx, nil, ov, nil, slot, "", status.FromContextError(err).Err() // the client has gone
		}
	}
	ctx, m := servedContext(ctx, claim, level)
	if probe {
		return ctx, m, ov, p, slot, ov.Advice(), nil
	}
	return ctx, m, ov, p, slot, ov.Served(attempt), nil
}

// finish records how a served call ended on p and in ov, and reports
// whether it failed, or failed for a guarded call its handler made in ctx
// that failed, m that context's Mark: such a failure is recorded as
// neither (see serverside.Chained), and its answer is to carry the advice.
func finish(ov *serverside.Overload, o *options, p srebreaker.Promise, ctx context.Context, m *chain.Mark,
	err error) (failure, fromDependency bool) {
	x, fromDependency := serverside.Chained(serverside.Gone(ctx, o.classify(ctx, err)), m)
	recordAs(p, x, err)
	_, isProbe := p.(serverside.Probe)
	ov.Finished(x, isProbe)
	return x == failed, fromDependency
}

// memories are the server side's memories of an interceptor's keys.
type memories struct{ serverside.Memories }

// answerStream is the stream of a handler with server streaming: it marks
// the call answered when the handler first sends its header or a message.
type answerStream struct {
	grpc.ServerStream
	call *streamCall
}

func (s *answerStream) SendHeader(md metadata.MD) error {
	err := s.ServerStream.SendHeader(md)
	if err == nil {
		s.call.answer()
	}
	return err
}

func (s *answerStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil {
		s.call.answer()
	}
	return err
}
