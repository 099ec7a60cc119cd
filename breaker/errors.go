package breaker

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// ErrServiceUnavailable is what a dropped call returns, wrapped in an
	// error whose text also names the breaker and its last failure reasons.
	// Match it with errors.Is.
	ErrServiceUnavailable = errors.New("breaker: service unavailable")

	// ErrInvalidOption is wrapped by the error [New] returns for an invalid
	// option; the full text names the option and its value.
	ErrInvalidOption = errors.New("breaker: invalid option")
)

// maxReasons is how many failure reasons a breaker keeps.
const maxReasons = 5

// reason is one failure reason and when it was recorded.
type reason struct {
	at   time.Time
	text string
}

// reasonLog keeps the last maxReasons failure reasons, and the error a
// dropped call returns, built from them once per change rather than per drop.
type reasonLog struct {
	mu    sync.Mutex
	ring  [maxReasons]reason // guarded by mu
	next  int                // guarded by mu; where the next reason goes
	count int                // guarded by mu; how many of ring are set

	// dropErr is the error for the reasons now held; nil after a change
	// until the next drop builds it again.
	dropErr atomic.Pointer[unavailableError]
}

// add records a failure reason. It does not allocate.
func (l *reasonLog) add(at time.Time, text string) {
	l.mu.Lock()
	l.ring[l.next] = reason{at: at, text: text}
	l.next = (l.next + 1) % maxReasons
	l.count = min(l.count+1, maxReasons)
	l.dropErr.Store(nil)
	l.mu.Unlock()
}

// err returns the error for a call dropped by the breaker called name. It
// allocates only when the reasons changed since it was last built.
func (l *reasonLog) err(name string) error {
	if e := l.dropErr.Load(); e != nil {
		return e
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.dropErr.Load(); e != nil {
		return e
	}
	e := &unavailableError{name: name, reasons: make([]reason, l.count)}
	for i := range e.reasons { // newest first
		e.reasons[i] = l.ring[(l.next-1-i+2*maxReasons)%maxReasons]
	}
	l.dropErr.Store(e)
	return e
}

// snapshot returns the reasons held, newest first.
func (l *reasonLog) snapshot() []Reason {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Reason, l.count)
	for i := range out {
		r := l.ring[(l.next-1-i+2*maxReasons)%maxReasons]
		out[i] = Reason{At: r.at, Text: r.text}
	}
	return out
}

// unavailableError is returned for a dropped call. It matches
// ErrServiceUnavailable, and its text names the breaker and the last failure
// reasons, newest first, so that a log line says why a dependency is shed.
type unavailableError struct {
	name    string
	reasons []reason // newest first; never changed once built
}

func (e *unavailableError) Error() string {
	var sb strings.Builder
	sb.WriteString(ErrServiceUnavailable.Error())
	sb.WriteString(" (breaker ")
	sb.WriteString(strconv.Quote(e.name))
	if len(e.reasons) > 0 {
		sb.WriteString("; last failures, newest first:")
		for i, r := range e.reasons {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteByte(' ')
			sb.WriteString(r.at.Format("2006-01-02T15:04:05.000Z07:00"))
			sb.WriteByte(' ')
			sb.WriteString(strconv.Quote(r.text))
		}
	}
	sb.WriteByte(')')
	return sb.String()
}

func (e *unavailableError) Unwrap() error { return ErrServiceUnavailable }
