package serverside

import "strconv"

// MaxAttempt is the highest attempt number a server reads: a client that
// claims more is read as MaxAttempt. An attempt number is a client's claim
// about itself; the cap keeps what a server does with it (a histogram, a
// share of retries) bounded.
const MaxAttempt = 100

// ParseAttempt reads a 1-based attempt number, as HTTP's
// Srebreaker-Attempt header carries it: 1 unless v is a positive integer,
// at most MaxAttempt.
func ParseAttempt(v string) int {
	if !IsDigits(v) {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n >= MaxAttempt { // err: too large for an int
		return MaxAttempt
	}
	return max(n, 1)
}

// AfterPrevious reads the attempt number of a call from the counts of the
// attempts that came before it, as gRPC's grpc-previous-rpc-attempts
// metadata carries them: one more than the highest of vs, 1 when none is
// a non-negative integer, at most MaxAttempt.
func AfterPrevious(vs []string) int {
	n := 1
	for _, v := range vs {
		if !IsDigits(v) {
			continue
		}
		p, err := strconv.Atoi(v)
		if err != nil || p >= MaxAttempt { // err: too large for an int
			return MaxAttempt
		}
		n = max(n, p+1)
	}
	return n
}

// IsDigits reports whether v is a non-empty run of ASCII digits, as the
// numbers of the wire formats (attempt numbers, Retry-After, pushback)
// must be.
func IsDigits(v string) bool {
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
