package connectbreaker

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"connectrpc.com/connect"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// codeOf is the code a call ended with: OK for nil; the code of a
// *connect.Error in err's chain; for any other error, as connect's
// handlers answer it: canceled or deadline_exceeded for a context's
// error, unknown for the rest.
func codeOf(err error) connect.Code {
	if err == nil {
		return codeOK
	}
	var ce *connect.Error
	switch {
	case errors.As(err, &ce):
		return ce.Code()
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	}
	return connect.CodeUnknown
}

// outcome is how a finished call is recorded.
type outcome = serverside.Outcome

const (
	succeeded = serverside.Success
	failed    = serverside.Failure
	ignored   = serverside.Ignore
)

// classify tells how a call that ended with err went, as grpcbreaker's
// interceptors do for the same codes. ctx is the call's context: canceled
// after it was canceled means the caller gave up. A failure that a
// shedding handler interceptor answered (see [ShedByServer]) is ignored:
// that server's breaker throttles what failed.
func (o *options) classify(ctx context.Context, err error) outcome {
	c := codeOf(err)
	switch {
	case c == codeOK:
		return succeeded
	case c == connect.CodeCanceled && errors.Is(ctx.Err(), context.Canceled):
		return ignored // the caller gave up: the dependency is not to blame
	case c == connect.CodeCanceled && o.client && brokenConnection(err):
		return failed // the server reset the connection: see brokenConnection
	case c <= maxCode && o.failures&(1<<c) != 0:
		if ShedByServer(err) {
			return ignored
		}
		return failed
	case c == connect.CodeCanceled:
		return ignored
	}
	return succeeded
}

// brokenConnection reports whether err says that the connection broke
// under the call: reset by the peer, or closed while written to. connect's
// clients give such a call code canceled, as its handlers do when their
// client goes away, although on a client it is the server that went away:
// a server that resets every connection would otherwise be a dependency
// whose calls count as neither, never shed.
func brokenConnection(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// record reports on p how a call that ended with err went (see classify),
// an overload rejection with srebreaker.RejectOverloaded,
// and returns it.
func (o *options) record(p srebreaker.Promise, ctx context.Context, err error) outcome {
	x := o.classify(ctx, err)
	if x == failed && Overloaded(err) { // a server with no room: see srebreaker.OverloadRejecter
		srebreaker.RejectOverloaded(p, err.Error())
		return x
	}
	recordAs(p, x, err)
	return x
}

// recordClient is record for a client's call of breaker b: a failure, or
// the answer of a shedding server, is noted in the chain.Mark of ctx too,
// if it holds one (see package chain).
func (o *options) recordClient(b chain.Namer, p srebreaker.Promise, ctx context.Context, err error) outcome {
	x := o.record(p, ctx, err)
	if x == failed || x == ignored && ShedByServer(err) {
		chain.Failed(ctx, b)
	}
	return x
}

// recordAs reports x, the outcome of a call that ended with err, on p.
func recordAs(p srebreaker.Promise, x outcome, err error) {
	switch x {
	case succeeded:
		p.Accept()
	case failed:
		p.Reject(err.Error())
	default:
		srebreaker.Ignore(p)
	}
}

// contextError is the error of a call whose context was done before it
// was made: canceled or deadline_exceeded, as connect answers it.
func contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	return connect.NewError(connect.CodeCanceled, err)
}

// wrongSide is the error of a call that met an interceptor on the wrong
// side; what says which.
func wrongSide(what string) error {
	return connect.NewError(connect.CodeInternal, fmt.Errorf("%w: %s", ErrWrongSide, what))
}

const (
	clientOnHandler = "a ClientInterceptor is given to a handler; give it a HandlerInterceptor"
	handlerOnClient = "a HandlerInterceptor is given to a client; give it a ClientInterceptor"
)
