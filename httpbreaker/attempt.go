package httpbreaker

import (
	"net/http"
	"strconv"

	"github.com/srebreaker/srebreaker/retry"
)

// AttemptHeader is the request header that carries the number of the
// attempt a request is, 1-based: "2" for the first retry. A [Transport]
// sets it, on a copy of the request, when the request's context carries an
// attempt number above 1 (see [retry.WithAttempt], which [retry.Policy.Do]
// sets for each attempt); a first attempt goes without it. Servers read it
// with [AttemptOf].
const AttemptHeader = "Srebreaker-Attempt"

// RetryNo is the value of [RetryHeader] that says "don't retry".
const RetryNo = "no"

// MaxAttempt is the highest attempt number [AttemptOf] reads: a client that
// claims more is read as MaxAttempt. An attempt number is a client's claim
// about itself; the cap keeps what a server does with it (a histogram, a
// share of retries) bounded.
const MaxAttempt = 100

// AttemptOf returns the attempt number r carries in its [AttemptHeader]:
// 1 when it has none or the value is not a positive integer, at most
// [MaxAttempt].
func AttemptOf(r *http.Request) int {
	vs := r.Header[AttemptHeader]
	if len(vs) == 0 {
		return 1
	}
	return parseAttempt(vs[0])
}

// parseAttempt reads an attempt number: 1 unless v is a positive integer,
// at most MaxAttempt.
func parseAttempt(v string) int {
	if !isDigits(v) {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n >= MaxAttempt { // err: too large for an int
		return MaxAttempt
	}
	return max(n, 1)
}

// isDigits reports whether v is a non-empty run of ASCII digits.
func isDigits(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
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
