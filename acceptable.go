package srebreaker

// Acceptable decides whether a call that returned err still counts as a
// success for the breaker. It lets a caller treat, for example, a "not found"
// answer as a healthy dependency while a timeout counts against it.
//
// An Acceptable may be called from many goroutines at once. A panic inside it
// is recorded as a failure of the call and then raised again.
type Acceptable func(err error) bool

// DefaultAcceptable is the [Acceptable] used when none is given: only a nil
// error counts as a success.
func DefaultAcceptable(err error) bool {
	return err == nil
}
