package connectbreaker

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/srebreaker/srebreaker/internal/serverside"
)

// RetryHeader is the header (the trailer, for gRPC and gRPC-Web) in which
// a [HandlerInterceptor] whose breaker is shedding gives its advice on
// retrying, as httpbreaker's Handler does under the same name: "no" when
// most of what it sheds is already a retry (the overload is wide, not
// local: a retry would only add to it), "later" otherwise. It sets it on
// the calls it sheds and on the failures of the calls it serves while it
// sheds; the errors carry it in their metadata (connect.Error.Meta).
//
// The same answers carry the advice twice more, for gRPC clients: a
// grpc-retry-pushback-ms trailer, which gRPC's own retries heed (1000 ms
// for a shed call, -1 for "no"), and a google.rpc.ErrorInfo detail of
// [ErrorDomain], which grpcbreaker's client interceptors read.
const RetryHeader = "Srebreaker-Retry"

// The advice a shedding handler gives in its RetryHeader.
const (
	// RetryNo says "don't retry".
	RetryNo = "no"
	// RetryLater says "retry later".
	RetryLater = "later"
)

// ErrorDomain is the domain of the google.rpc.ErrorInfo detail that the
// error of a call answered by a shedding [HandlerInterceptor] carries:
// reason "SHED" for a call its breaker shed, "SHEDDING" for a failure of a
// call it served while it shed others, and metadata "retry" set to "no" or
// "later", its advice. It is grpcbreaker's ErrorDomain: each package's
// clients read the other's servers' answers.
const ErrorDomain = "srebreaker"

// pushbackHeader is the trailer in which gRPC servers tell gRPC's retries
// when to retry (gRFC A6): a non-negative number of milliseconds, or
// anything else (-1) for "don't retry".
const pushbackHeader = "Grpc-Retry-Pushback-Ms"

// MaxPushback is the longest wait a server's pushback is read as: an
// answer from outside is bounded like any other input.
const MaxPushback = 5 * time.Minute

// The reasons of the ErrorInfo detail.
const (
	reasonShed     = "SHED"
	reasonShedding = "SHEDDING"
	// reasonOverloaded marks a call the overload limit rejected.
	reasonOverloaded = "OVERLOADED"
	pushbackLater    = "1000" // ms: httpbreaker's DefaultRetryAfter
	pushbackNo       = "-1"
)

// errorInfoType is the type name of a google.rpc.ErrorInfo detail.
const errorInfoType = "google.rpc.ErrorInfo"

// ShedByServer reports whether err is the error of a call answered by a
// server whose breaker is shedding: a [HandlerInterceptor], grpcbreaker's
// server interceptors or httpbreaker's Handler. It is the call shed
// (unavailable), or a failure of a call the server served while it shed
// others. Such an answer says that the server's breaker is already
// throttling what failed: a client breaker that counted it as a failure
// would throttle the same dependency a second time, and the two breakers
// would keep each other from seeing it heal. A [ClientInterceptor] records
// it as neither a success nor a failure.
// A call rejected by the server's overload limit is not such an answer
// (see [Overloaded]).
func ShedByServer(err error) bool {
	_, overloaded, ok := serverAdvice(err)
	return ok && !overloaded
}

// OverloadHeader is the metadata key (a response header in the Connect
// protocol) that marks a call a [HandlerInterceptor]'s overload limit
// rejected, as httpbreaker's Handler marks its rejections: the server had
// no room for it. Such an error is unavailable, and carries the advice
// like a shed call's, and an ErrorInfo detail of reason "OVERLOADED".
const OverloadHeader = "Srebreaker-Overloaded"

// Overloaded reports whether err is the error of a call that a server's
// overload limit rejected: a [HandlerInterceptor]'s, grpcbreaker's server
// interceptors' or httpbreaker's Handler's. Unlike a shed call, it says
// the server itself is overloaded: a [ClientInterceptor] counts it as a
// failure, so that the client's breaker throttles what it sends there, as
// the SRE design's clients do on a server's overload errors.
func Overloaded(err error) bool {
	_, overloaded, ok := serverAdvice(err)
	return ok && overloaded
}

// overloadAnswer is the error of a call the overload limit rejected, with
// advice.
func overloadAnswer(advice string) *connect.Error {
	e := connect.NewError(connect.CodeUnavailable, errOverloaded)
	meta := e.Meta()
	meta[OverloadHeader] = overloadValue
	if advice == RetryNo {
		e.AddDetail(overloadNo)
		meta[RetryHeader], meta[pushbackHeader] = retryNoValue, pushbackNoValue
	} else {
		e.AddDetail(overloadLater)
		meta[RetryHeader], meta[pushbackHeader] = retryLaterValue, pushbackLaterValue
	}
	return e
}

// The metadata values of the answers a HandlerInterceptor makes, made
// once and set by their canonical keys: an error's metadata is its own,
// but the values are shared by every answer; http.Header's Add copies a
// value before it appends, and Set replaces it.
var (
	overloadValue      = []string{"1"}
	retryLaterValue    = []string{RetryLater}
	retryNoValue       = []string{RetryNo}
	pushbackLaterValue = []string{pushbackLater}
	pushbackNoValue    = []string{pushbackNo}
)

// errOverloaded is the cause of a call the overload limit rejected.
var errOverloaded = errors.New("connectbreaker: call rejected: the server is overloaded, retry later")

// RetryRefused reports whether err is the error of a call answered by a
// shedding server that advises against retrying it: most of what the
// server sheds is already a retry.
func RetryRefused(err error) bool {
	a, _, ok := serverAdvice(err)
	return ok && a == RetryNo
}

// serverAdvice returns the advice that err's metadata ([RetryHeader]) or
// its ErrorInfo detail of ErrorDomain carries, if any, and whether it
// marks a rejection by an overload limit ([OverloadHeader], or the
// detail's reason).
func serverAdvice(err error) (advice string, overloaded, ok bool) {
	var ce *connect.Error
	if err == nil || !errors.As(err, &ce) {
		return "", false, false
	}
	meta := http.Header(ce.Meta())
	if vs := meta.Values(RetryHeader); len(vs) > 0 {
		return vs[0], len(meta.Values(OverloadHeader)) > 0, true
	}
	for _, d := range ce.Details() {
		if d.Type() != errorInfoType {
			continue
		}
		if v, derr := d.Value(); derr == nil {
			if info, isInfo := v.(*errdetails.ErrorInfo); isInfo && info.GetDomain() == ErrorDomain {
				return info.GetMetadata()["retry"], info.GetReason() == reasonOverloaded, true
			}
		}
	}
	return "", false, false
}

// pushbackError is the error of a call whose server said when to retry it,
// or not to: the call's error, with what the server said.
type pushbackError struct {
	err   error
	d     time.Duration
	retry bool
}

func (e *pushbackError) Error() string { return e.err.Error() }
func (e *pushbackError) Unwrap() error { return e.err }

// RetryPushback implements [retry.Pushback].
func (e *pushbackError) RetryPushback() (time.Duration, bool) { return e.d, e.retry }

// withPushback returns err with what the server said about retrying it, if
// anything: a grpc-retry-pushback-ms value (a non-negative number of
// milliseconds says when, at most MaxPushback; anything else, "don't
// retry"), or a RetryHeader of "no".
func withPushback(err error) error {
	var ce *connect.Error
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	meta := http.Header(ce.Meta())
	if vs := meta.Values(pushbackHeader); len(vs) > 0 {
		e := &pushbackError{err: err}
		if serverside.IsDigits(vs[0]) {
			ms, perr := strconv.ParseInt(vs[0], 10, 64)
			e.retry, e.d = true, MaxPushback
			if perr == nil && ms < int64(MaxPushback/time.Millisecond) {
				e.d = time.Duration(ms) * time.Millisecond
			}
		}
		return e
	}
	if RetryRefused(err) {
		return &pushbackError{err: err}
	}
	return err
}

// serverShedMsg is the message a client gets for a call the handler's
// breaker dropped; the failure reasons stay on the server.
const serverShedMsg = "connectbreaker: call shed by the server's breaker: the server is overloaded, retry later"

// shedCause is the cause of a shed call's error: serverShedMsg, and it
// unwraps to the breaker's drop error, which matches
// breaker.ErrServiceUnavailable, for the interceptors around the handler's.
type shedCause struct{ err error }

func (e *shedCause) Error() string { return serverShedMsg }
func (e *shedCause) Unwrap() error { return e.err }

// The ErrorInfo details of the answers, made once: connect copies what it
// sends.
var (
	shedLater     = infoDetail(reasonShed, RetryLater)
	shedNo        = infoDetail(reasonShed, RetryNo)
	sheddingLater = infoDetail(reasonShedding, RetryLater)
	sheddingNo    = infoDetail(reasonShedding, RetryNo)
	overloadLater = infoDetail(reasonOverloaded, RetryLater)
	overloadNo    = infoDetail(reasonOverloaded, RetryNo)
)

func infoDetail(reason, advice string) *connect.ErrorDetail {
	d, err := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain,
		Metadata: map[string]string{"retry": advice}})
	if err != nil {
		panic(err) // an ErrorInfo always marshals
	}
	return d
}

// shedAnswer is the error a handler answers a shed call with: unavailable,
// its advice in the RetryHeader, in the pushback trailer and in the
// ErrorInfo detail. drop is the breaker's error.
func shedAnswer(drop error, advice string) *connect.Error {
	e := connect.NewError(connect.CodeUnavailable, &shedCause{drop})
	meta := e.Meta()
	if advice == RetryNo {
		e.AddDetail(shedNo)
		meta[RetryHeader], meta[pushbackHeader] = retryNoValue, pushbackNoValue
	} else {
		e.AddDetail(shedLater)
		meta[RetryHeader], meta[pushbackHeader] = retryLaterValue, pushbackLaterValue
	}
	return e
}

// failureAnswer is err, the failure of a call served while the breaker
// sheds, with the advice: a new error of the same code, message, details
// and metadata (err may be a value the handler shares), which unwraps to
// err, with the advice in the RetryHeader, in the ErrorInfo detail and, for
// "no", in the pushback trailer.
func failureAnswer(err error, advice string) *connect.Error {
	var e *connect.Error
	var ce *connect.Error
	if errors.As(err, &ce) {
		e = connect.NewError(ce.Code(), &messageOf{msg: ce.Message(), err: err})
		for _, d := range ce.Details() {
			e.AddDetail(d)
		}
		meta := e.Meta()
		for k, vs := range ce.Meta() {
			meta[k] = append([]string(nil), vs...)
		}
	} else {
		e = connect.NewError(codeOf(err), err)
	}
	meta := e.Meta()
	meta[RetryHeader] = []string{advice}
	if advice == RetryNo {
		e.AddDetail(sheddingNo)
		meta[pushbackHeader] = []string{pushbackNo}
	} else {
		e.AddDetail(sheddingLater)
	}
	return e
}

// messageOf is an error that reads as msg and unwraps to err.
type messageOf struct {
	msg string
	err error
}

func (e *messageOf) Error() string { return e.msg }
func (e *messageOf) Unwrap() error { return e.err }
