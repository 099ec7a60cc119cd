package grpcbreaker

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker"
	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// code is the status code a call ended with: nil is OK; an error without a
// status is read as gRPC's server does, so that a context error is Canceled
// or DeadlineExceeded and anything else Unknown.
func code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return status.FromContextError(err).Code()
}

// outcome is how a finished call is recorded.
type outcome = serverside.Outcome

const (
	succeeded = serverside.Success
	failed    = serverside.Failure
	ignored   = serverside.Ignore
)

// classify tells how a call that ended with err went. ctx is the call's
// context: Canceled after it was canceled means the caller gave up. A
// failure that a shedding server interceptor answered (see
// [ShedByServer]) is ignored: that server's breaker throttles what failed.
func (o *options) classify(ctx context.Context, err error) outcome {
	c := code(err)
	switch {
	case c == codes.OK:
		return succeeded
	case c == codes.Canceled && errors.Is(ctx.Err(), context.Canceled):
		return ignored // the caller gave up: the dependency is not to blame
	case o.failures&(1<<c) != 0:
		if ShedByServer(err) {
			return ignored
		}
		return failed
	case c == codes.Canceled:
		return ignored
	}
	return succeeded
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

// shedError is the error of a call a breaker dropped: status code
// Unavailable with msg, and it unwraps to the breaker's drop error, which
// matches breaker.ErrServiceUnavailable.
type shedError struct {
	msg string
	err error
	st  *status.Status // the status sent, with its details; nil for Unavailable and msg
}

func (e *shedError) Error() string { return e.msg }
func (e *shedError) Unwrap() error { return e.err }

// GRPCStatus makes status.FromError and status.Code read the error as
// Unavailable.
func (e *shedError) GRPCStatus() *status.Status {
	if e.st != nil {
		return e.st
	}
	return status.New(codes.Unavailable, e.msg)
}

// clientShed is the error of a call the client's breaker dropped; its
// message carries the breaker's name and last failure reasons.
func clientShed(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err() // AllowCtx: the context ended after it was looked at
	}
	return &shedError{msg: "grpcbreaker: call shed by the client's breaker: " + err.Error(), err: err}
}

// serverShedMsg is the message a client gets for a call the server's
// breaker dropped; the failure reasons stay on the server.
const serverShedMsg = "grpcbreaker: call shed by the server's breaker: the server is overloaded, retry later"

func serverShed(err error) error { return &shedError{msg: serverShedMsg, err: err} }

// advise gives e's status the ErrorInfo detail of a call the server's
// breaker shed, with advice (see ErrorDomain).
func (e *shedError) advise(advice string) {
	e.st = shedStatus(advice)
}
