package httpbreaker

import (
	"net/http"
	"strconv"

	"github.com/srebreaker/srebreaker/internal/serverside"
	"github.com/srebreaker/srebreaker/retry"
)

// AttemptHeader is the request header that carries the number of the
// attempt a request is, 1-based: "2" for the first retry. A [Transport]
// sets it, on a copy of the request, when the request's context carries an
// attempt number above 1 (see [retry.WithAttempt], which [retry.Policy.Do]
// sets for each attempt); a first attempt goes without it. Servers read it
// with [AttemptOf].
const AttemptHeader = "Srebreaker-Attempt"

// The values of [RetryHeader], a shedding [Handler]'s advice.
const (
	// RetryNo says "don't retry": most of what the Handler sheds is
	// already a retry.
	RetryNo = "no"
	// RetryLater says "retry later", after the answer's Retry-After.
	RetryLater = "later"
)

// AttemptOf returns the attempt number r carries in its [AttemptHeader]:
// 1 when it has none or the value is not a positive integer, at most 100.
// An attempt number is a client's claim about itself: a client that claims
// more is read as 100, so that what a server does with it (a histogram, a
// share of retries) stays bounded.
func AttemptOf(r *http.Request) int {
	vs := r.Header[AttemptHeader]
	if len(vs) == 0 {
		return 1
	}
	return serverside.ParseAttempt(vs[0])
}

// withAttempt returns req with its AttemptHeader saying the attempt number
// its context carries, on a copy, when that number is above 1 and the
// header does not say it already; otherwise req itself.
func withAttempt(req *http.Request) *http.Request {
	n := retry.Attempt(req.Context())
	if n < 2 {
		return req
	}
	v := strconv.Itoa(n)
	if vs := req.Header[AttemptHeader]; len(vs) == 1 && vs[0] == v {
		return req
	}
	out := new(http.Request)
	*out = *req
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	out.Header[AttemptHeader] = []string{v}
	return out
}
