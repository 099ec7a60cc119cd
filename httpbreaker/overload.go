package httpbreaker

import (
	"net/http"

	"github.com/srebreaker/srebreaker/internal/chain"
	"github.com/srebreaker/srebreaker/internal/serverside"
)

// RetryHeader is the response header in which a [Handler] whose breaker is
// shedding gives its advice on retrying: [RetryNo] when most of what it
// sheds is already a retry (the overload is wide, not local: a retry would
// only add to it), [RetryLater] otherwise, with a Retry-After. The Handler
// sets it on the requests it sheds (503 Service Unavailable), on the
// failures (5xx) of the requests it serves while it sheds, on a failure
// that follows a guarded call of the handler's that failed or was dropped
// (see [Handler]), and, with [OverloadHeader], on the requests its
// overload limit rejects.
//
// A [Transport] with the default [ClientClassifier] records a failure that
// carries the header as neither a success nor a failure: the server's
// breaker is already throttling the dependency that failed, and a client
// breaker that counted its sheds as failures would shed too, each breaker
// then starving the other of the evidence it needs to readmit the
// dependency once it heals (docs/guide/http.md, "Client and server breakers").
const RetryHeader = "Srebreaker-Retry"

// OverloadHeader is the response header that marks a request a
// [Handler]'s overload limit rejected: the server had no room for it
// (503 Service Unavailable, with Retry-After and [RetryHeader] advice).
// Unlike a shed request's answer, it says that the server itself is
// overloaded, not a dependency of it: a [Transport] with the default
// [ClientClassifier] counts it as a failure, so that the client's breaker
// throttles what it sends, as the SRE design's clients do on a server's
// overload errors (see [Overloaded]).
const OverloadHeader = "Srebreaker-Overloaded"

// overloadValue is OverloadHeader's value.
var overloadValue = []string{"1"}

// Overloaded reports whether resp is a [Handler]'s answer to a request its
// overload limit rejected: 503 with [OverloadHeader].
func Overloaded(resp *http.Response) bool {
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		return false
	}
	_, ok := resp.Header[OverloadHeader]
	return ok
}

// outcomeOf is x as the server side reads it.
func outcomeOf(x Outcome) serverside.Outcome {
	switch x {
	case Success:
		return serverside.Success
	case Ignore:
		return serverside.Ignore
	}
	return serverside.Failure
}

// chained is serverside.Chained for a Handler's outcome o: Ignore for a
// failure that follows a failed guarded call the handler made in its
// request's context.
func chained(o Outcome, m *chain.Mark) Outcome {
	if o == Success || o == Ignore {
		return o
	}
	if x, _ := serverside.Chained(serverside.Failure, m); x == serverside.Ignore {
		return Ignore
	}
	return o
}
