package grpcbreaker

import (
	"context"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/srebreaker/srebreaker/internal/serverside"
)

// PushbackTrailer is the trailer in which a server interceptor whose
// breaker sheds tells gRPC's own retries (gRFC A6) when to retry a call it
// shed: a positive number of milliseconds (1000), or -1 when most of what
// it sheds is already a retry (the overload is wide, not local: a retry
// would only add to it), which grpc-go's retry policy reads as "don't
// retry". A failure of a call it served while it sheds carries -1 in that
// case too.
const PushbackTrailer = "grpc-retry-pushback-ms"

// ErrorDomain is the domain of the google.rpc.ErrorInfo detail that the
// status of a call answered by a shedding server interceptor carries:
// reason "SHED" for a call its breaker shed, "SHEDDING" for a failure of a
// call it served while it shed others, and metadata "retry" set to "no"
// or "later" ([RetryNo], [RetryLater]), its advice. [ShedByServer] and
// [RetryRefused] read it.
const ErrorDomain = "srebreaker"

// The values of the "retry" metadata of the ErrorInfo detail of
// [ErrorDomain], a shedding server interceptor's advice.
const (
	// RetryNo says "don't retry": most of what the server sheds is already
	// a retry. [RetryRefused] reports it.
	RetryNo = serverside.RetryNo
	// RetryLater says "retry later", after the pushback the trailer
	// [PushbackTrailer] gives.
	RetryLater = serverside.RetryLater
)

// The reasons of the ErrorInfo detail, and the pushback of each advice.
const (
	reasonShed     = "SHED"
	reasonShedding = "SHEDDING"
	// reasonOverloaded marks a call the overload limit rejected.
	reasonOverloaded = "OVERLOADED"
	pushbackLater    = "1000" // ms: an httpbreaker Handler's default Retry-After
	pushbackNo       = "-1"
)

// ShedByServer reports whether err is the status of a call answered by a
// server interceptor whose breaker is shedding: a call it shed
// (Unavailable), or a failure of a call it served while it shed others.
// Such an answer says that the server's breaker is already throttling what
// failed: a client breaker that counted it as a failure would throttle the
// same dependency a second time, and the two breakers would keep each
// other from seeing it heal. The client interceptors record it as neither
// a success nor a failure.
// A call rejected by the server's overload limit is not such an answer
// (see [Overloaded]).
func ShedByServer(err error) bool {
	_, reason, ok := serverAdvice(err)
	return ok && reason != reasonOverloaded
}

// Overloaded reports whether err is the status of a call that a server
// interceptor's overload limit rejected: the server had no room for it.
// Its status is Unavailable with a google.rpc.ErrorInfo detail of
// [ErrorDomain], reason "OVERLOADED" and the retry advice, and its
// trailers hold [PushbackTrailer]. Unlike a shed call, it says the server
// itself is overloaded: the client interceptors count it as a failure, so
// that the client's breaker throttles what it sends there, as the SRE
// design's clients do on a server's overload errors.
func Overloaded(err error) bool {
	_, reason, ok := serverAdvice(err)
	return ok && reason == reasonOverloaded
}

// RetryRefused reports whether err is the status of a call answered by a
// shedding server interceptor that advises against retrying it: most of
// what the server sheds is already a retry. Its trailers then hold
// [PushbackTrailer] -1 too.
func RetryRefused(err error) bool {
	a, _, ok := serverAdvice(err)
	return ok && a == RetryNo
}

// serverAdvice returns the advice and the reason of the ErrorInfo detail
// that err's status carries, if it has one from ErrorDomain.
func serverAdvice(err error) (advice, reason string, ok bool) {
	if err == nil {
		return "", "", false
	}
	st, isStatus := status.FromError(err)
	if !isStatus || st.Code() == codes.OK {
		return "", "", false
	}
	for _, d := range st.Proto().GetDetails() {
		if d.GetTypeUrl() != errorInfoURL {
			continue
		}
		var info errdetails.ErrorInfo
		if d.UnmarshalTo(&info) == nil && info.GetDomain() == ErrorDomain {
			return info.GetMetadata()["retry"], info.GetReason(), true
		}
	}
	return "", "", false
}

// errorInfoURL is the type URL of a google.rpc.ErrorInfo detail.
const errorInfoURL = "type.googleapis.com/google.rpc.ErrorInfo"

// marked returns st with the ErrorInfo detail of reason and advice.
func marked(st *status.Status, reason, advice string) *status.Status {
	if m, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain,
		Metadata: map[string]string{"retry": advice}}); err == nil {
		st = m
	}
	return st
}

// The statuses of a shed call, made once: a status is not changed once
// made, and gRPC copies what it sends.
var (
	shedLater = marked(status.New(codes.Unavailable, serverShedMsg), reasonShed, RetryLater)
	shedNo    = marked(status.New(codes.Unavailable, serverShedMsg), reasonShed, RetryNo)
)

// The errors of a call the overload limit rejected, whose statuses, like
// a shed call's, are not changed once made.
var (
	overloadedLaterErr = marked(status.New(codes.Unavailable, serverOverloadedMsg), reasonOverloaded, RetryLater).Err()
	overloadedNoErr    = marked(status.New(codes.Unavailable, serverOverloadedMsg), reasonOverloaded, RetryNo).Err()
)

// serverOverloadedMsg is the message of a call the overload limit
// rejected.
const serverOverloadedMsg = "grpcbreaker: call rejected: the server is overloaded, retry later"

// overloadedError returns the error of a call the overload limit
// rejected, with advice: made once, as its status is, so that a rejection
// allocates none.
func overloadedError(advice string) error {
	if advice == RetryNo {
		return overloadedNoErr
	}
	return overloadedLaterErr
}

// shedStatus returns the status of a shed call with advice.
func shedStatus(advice string) *status.Status {
	if advice == RetryNo {
		return shedNo
	}
	return shedLater
}

// pushback returns the trailer that goes with advice: PushbackTrailer for
// a call the breaker shed, and for a failure only when the advice is "no";
// nil for no advice.
func pushback(advice string, shed bool) metadata.MD {
	switch {
	case advice == "":
		return nil
	case advice == RetryNo:
		return pushbackNoMD
	case shed:
		return pushbackLaterMD
	}
	return nil
}

// The trailers pushback returns, made once: gRPC copies a trailer it is
// set (metadata.Join), and none is changed once made.
var (
	pushbackNoMD    = metadata.Pairs(PushbackTrailer, pushbackNo)
	pushbackLaterMD = metadata.Pairs(PushbackTrailer, pushbackLater)
)

// failureAnswer is err, the failure of a call served while the breaker
// sheds, with the advice in an ErrorInfo detail.
func failureAnswer(err error, advice string) error {
	return marked(status.Convert(err), reasonShedding, advice).Err()
}

// setTrailer sets md, if any, as a trailer of the unary call of ctx.
func setTrailer(ctx context.Context, md metadata.MD) {
	if md != nil {
		_ = grpc.SetTrailer(ctx, md)
	}
}
