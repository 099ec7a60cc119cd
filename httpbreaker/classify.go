package httpbreaker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/srebreaker/srebreaker"
)

// Outcome is how a finished call is recorded by its breaker.
type Outcome int

const (
	// Success records the call as a success.
	Success Outcome = iota
	// Failure records the call as a failure.
	Failure
	// Ignore records neither: the call says nothing about the dependency's
	// health (see [srebreaker.Ignorer]).
	Ignore
)

// String returns "success", "failure", "ignore" or "Outcome(n)".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignore:
		return "ignore"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Classifier decides how a finished call is recorded. A value other than
// [Success], [Failure] and [Ignore] counts as a failure. A panic in a
// Classifier is recorded as a failure and raised again.
//
// For a [Transport], resp and err are what the wrapped RoundTripper
// returned; the classifier must not read or close resp.Body, which belongs
// to the caller. For a [Handler], resp holds the status code and the header
// the handler wrote (its Body is nil), and err is a [*PanicError] when the
// handler panicked, nil otherwise.
//
// A Classifier may be called from many goroutines at once.
type Classifier func(req *http.Request, resp *http.Response, err error) Outcome

// ClientClassifier is a [Transport]'s default [Classifier]. An error whose
// request context the caller canceled is [Ignore]; any other error (a
// connection refused, a reset, a deadline) is a [Failure], and so are 5xx
// and 429 Too Many Requests, except an answer that carries [RetryHeader]:
// a server whose breaker is shedding sent it, so that its breaker, nearer
// to the dependency, throttles it alone, and that answer is [Ignore]
// (see [ShedByServer]). A Handler's rejection for overload carries the
// header too, with [OverloadHeader]: it is a Failure, so that the client
// throttles what it sends to a server that has no room for it. Every
// other status is a [Success].
func ClientClassifier(req *http.Request, resp *http.Response, err error) Outcome {
	if err != nil {
		if errors.Is(req.Context().Err(), context.Canceled) {
			return Ignore
		}
		return Failure
	}
	if resp == nil {
		return Failure
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		if ShedByServer(resp) {
			return Ignore
		}
		return Failure
	}
	return Success
}

// ShedByServer reports whether resp is the answer of a server whose
// breaker is shedding, a [Handler]'s: a 5xx or 429 status with
// [RetryHeader]. It is either a request the server's breaker shed (503
// Service Unavailable with Retry-After) or a failure of a request it
// served while it shed others; not a rejection by the Handler's overload
// limit, which carries [OverloadHeader] and says the server itself has no
// room (see [Overloaded]). Such an answer says that the server's
// breaker is already throttling what failed: a client breaker that counted
// it as a failure would throttle the same dependency a second time, and the
// two breakers would keep each other from seeing it heal.
// [ClientClassifier] records it as neither a success nor a failure, and so
// does [ServerClassifier] for an answer a Handler's wrapped handler gives
// with the header (a shedding server's answer it forwards, as a reverse
// proxy does); a Classifier of your own can call ShedByServer to do the
// same. A Handler's [Classifier] does not see the header the Handler adds
// to its own failures while its breaker sheds.
func ShedByServer(resp *http.Response) bool {
	if resp == nil || resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
		return false
	}
	_, ok := resp.Header[RetryHeader]
	return ok && !Overloaded(resp)
}

// ServerClassifier is a [Handler]'s default [Classifier]. A call whose
// client had gone away before the handler finished (the request context
// was canceled: the client hung up or reset the stream) is [Ignore],
// whatever the handler answered or however it panicked: a 500 written
// because the request's context ended says nothing about the server's
// health. Otherwise a panic is a [Failure]; a 5xx status is a Failure,
// but for one the handler answered with [RetryHeader] (see
// [ShedByServer]): the answer of a shedding server that the handler
// forwards, whose breaker throttles it already, is Ignore, as a
// [Transport] records it; every other status, 429 included, is a
// [Success]: a handler that asks a client to slow down is working. A
// deadline that passed (a server-side timeout) is not a cancel by the
// client: it is classified by the answer.
func ServerClassifier(req *http.Request, resp *http.Response, err error) Outcome {
	if errors.Is(req.Context().Err(), context.Canceled) {
		return Ignore
	}
	if err != nil || resp == nil {
		return Failure
	}
	if resp.StatusCode >= 500 {
		if ShedByServer(resp) {
			return Ignore
		}
		return Failure
	}
	return Success
}

// PanicError is the error a [Handler] gives its [Classifier] when the
// handler panicked. Unwrap returns the panic value when it is an error, so
// errors.Is(err, http.ErrAbortHandler) tells a deliberate abort.
type PanicError struct {
	// Value is what the handler panicked with.
	Value any
}

// Error returns "httpbreaker: handler panicked: " and the value.
func (e *PanicError) Error() string { return fmt.Sprint("httpbreaker: handler panicked: ", e.Value) }

// Unwrap returns Value if it is an error, and nil otherwise.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// record reports o on p. A failure's reason is err's text, or the status.
func record(p srebreaker.Promise, o Outcome, resp *http.Response, err error) {
	switch o {
	case Success:
		p.Accept()
	case Ignore:
		srebreaker.Ignore(p)
	default:
		p.Reject(failureReason(o, resp, err))
	}
}

// failureReason says why a call failed, for the error of a later drop.
func failureReason(o Outcome, resp *http.Response, err error) string {
	var reason string
	switch {
	case err != nil:
		reason = err.Error()
	case resp != nil && resp.Status != "":
		reason = "HTTP " + resp.Status
	case resp != nil:
		reason = "HTTP " + strconv.Itoa(resp.StatusCode)
	default:
		reason = "no response and no error"
	}
	if o != Failure {
		reason += " (classifier returned " + o.String() + ")"
	}
	return reason
}
