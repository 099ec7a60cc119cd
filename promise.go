package srebreaker

// Promise is what a breaker hands back when it admits a call through
// Allow. The caller runs the call and then reports its outcome by calling
// exactly one of the two methods, exactly once: each call records one
// outcome, so a second call records a second one. A call that says nothing
// about the dependency's health, such as one the caller canceled, is
// reported with [Ignore] instead.
//
// The breaker's promises are safe for concurrent use by multiple goroutines.
type Promise interface {
	// Accept records that the call succeeded.
	Accept()
	// Reject records that the call failed. The reason is kept, with the time
	// it was given, among the last few failure reasons, and appears in the
	// text of the error the breaker returns when it drops a call.
	Reject(reason string)
}
