package serverside

// MaxAttempt is the highest attempt number a server reads: a client that
// claims more is read as MaxAttempt. An attempt number is a client's claim
// about itself; the cap keeps what a server does with it (a histogram, a
// share of retries) bounded.
const MaxAttempt = 100

// ParseAttempt reads a 1-based attempt number, as HTTP's
// Srebreaker-Attempt header carries it: 1 unless v is a positive integer,
// at most MaxAttempt.
func ParseAttempt(v string) int {
	n, ok := Digits(v, MaxAttempt)
	if !ok {
		return 1
	}
	return int(max(n, 1))
}

// AfterPrevious reads the attempt number of a call from the counts of the
// attempts that came before it, as gRPC's grpc-previous-rpc-attempts
// metadata carries them: one more than the highest of vs, 1 when none is
// a non-negative integer, at most MaxAttempt.
func AfterPrevious(vs []string) int {
	n := 1
	for _, v := range vs {
		p, ok := Digits(v, MaxAttempt-1)
		if ok {
			n = max(n, int(p)+1)
		}
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

// Digits reads v, a number of a wire format, as [IsDigits] requires it:
// ok is false for anything else. n is its value, or limit when it is
// larger; limit must not be negative. It reads v in place and allocates
// nothing, however long v is: strconv's errors copy the whole input, which
// a client sends.
func Digits(v string, limit int64) (n int64, ok bool) {
	if !IsDigits(v) {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		d := int64(v[i] - '0')
		if n > limit/10 || n*10 > limit-d { // n*10+d > limit, without overflow
			return limit, true
		}
		n = n*10 + d
	}
	return n, true
}
