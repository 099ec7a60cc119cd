package breaker

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

var (
	// ErrServiceUnavailable is what a dropped call returns, wrapped in an
	// error whose text also names the breaker and its newest failure reason.
	// Match it with errors.Is.
	ErrServiceUnavailable = errors.New("breaker: service unavailable")

	// ErrInvalidOption is wrapped by the error [New] returns for an invalid
	// option; the full text names the option and its value.
	ErrInvalidOption = errors.New("breaker: invalid option")

	// ErrForced is matched, besides ErrServiceUnavailable, by the error a
	// call dropped by a [override.ShedAll] override returns; its text says who set
	// the override, why, and until when.
	ErrForced = errors.New("breaker: forced open by an override")

	// ErrInvalidOverride is wrapped by the error [Breaker.SetOverride] returns for
	// an invalid [override.Spec]; the full text names the field and its value.
	ErrInvalidOverride = errors.New("breaker: invalid override")

	// ErrNotOverridable is wrapped by the error [Breaker.SetOverride] and
	// [Breaker.ClearOverride] return for a breaker that cannot hold an override:
	// [Nop], nil, or an implementation of Breaker other than this
	// package's.
	ErrNotOverridable = errors.New("breaker: breaker cannot hold an override")
)

// maxReasons is how many failure reasons a breaker keeps.
const maxReasons = 5

// maxReasonLen is the most bytes of a failure reason a breaker keeps: a
// longer one is cut, on a UTF-8 boundary, and marked with "…".
const maxReasonLen = 256

// reason is one failure reason and when it was recorded.
type reason struct {
	at   time.Time
	text string
}

// reasonLog keeps the last maxReasons failure reasons, and the error a
// dropped call returns, built from them once per change rather than per drop.
type reasonLog struct {
	mu sync.Mutex
	// ring is made at the first failure: most breakers never see one, and
	// it is most of a breaker's fixed size outside its windows.
	ring  *[maxReasons]reason // guarded by mu
	next  int                 // guarded by mu; where the next reason goes
	count int                 // guarded by mu; how many of ring are set

	// dropErr is the error for the reasons now held; nil after a change
	// until the next drop builds it again.
	dropErr atomic.Pointer[unavailableError]
}

// add records a failure reason, bounded by boundReason. It does not
// allocate unless the text has to be cut or escaped, or it is the
// breaker's first.
func (l *reasonLog) add(at time.Time, text string) {
	text = boundReason(text)
	l.mu.Lock()
	if l.ring == nil {
		l.ring = new([maxReasons]reason)
	}
	l.ring[l.next] = reason{at: at, text: text}
	l.next = (l.next + 1) % maxReasons
	l.count = min(l.count+1, maxReasons)
	l.dropErr.Store(nil)
	l.mu.Unlock()
}

// err returns the error for a call dropped by the breaker called name. It
// allocates only when the reasons changed since it was last built, and
// then at most a few hundred bytes, whatever the reasons held.
func (l *reasonLog) err(name string) error {
	if e := l.dropErr.Load(); e != nil {
		return e
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.dropErr.Load(); e != nil {
		return e
	}
	var newest string
	if l.count > 0 {
		newest = l.ring[(l.next-1+maxReasons)%maxReasons].text
	}
	e := &unavailableError{text: dropText(name, newest, l.count)}
	l.dropErr.Store(e)
	return e
}

// newest returns the newest reason held, or "".
func (l *reasonLog) newest() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return ""
	}
	return l.ring[(l.next-1+maxReasons)%maxReasons].text
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

// dropText is the text of a drop error: one line, with the newest failure
// reason and how many older ones [Breaker.Stats] shows.
func dropText(name, newest string, count int) string {
	var sb strings.Builder
	sb.WriteString(ErrServiceUnavailable.Error())
	sb.WriteString(" (breaker ")
	sb.WriteString(strconv.Quote(boundReason(name)))
	if count > 0 {
		sb.WriteString(", last failure \"") // the reason is escaped already: no quoting twice
		sb.WriteString(newest)
		sb.WriteByte('"')
		if count > 1 {
			sb.WriteString(", ")
			sb.WriteString(strconv.Itoa(count - 1))
			sb.WriteString(" earlier")
		}
	}
	sb.WriteByte(')')
	return sb.String()
}

// boundReason returns text as a breaker keeps it: at most maxReasonLen
// bytes, cut on a UTF-8 boundary and marked with "…" when longer, control
// characters escaped (\n, \x00 …) and invalid UTF-8 replaced, so that a
// hostile upstream's answer costs a bounded amount of memory and cannot
// forge log lines. A text that needs none of this is returned as it is;
// one that does is a fresh copy, so the original can be freed.
func boundReason(text string) string {
	if len(text) <= maxReasonLen && isPlain(text) {
		return text
	}
	var sb strings.Builder
	for _, r := range text {
		var piece string
		switch {
		case r == utf8.RuneError:
			piece = string(utf8.RuneError)
		case unicode.IsControl(r):
			piece = strings.Trim(strconv.QuoteRune(r), "'")
		default:
			piece = string(r)
		}
		if sb.Len()+len(piece) > maxReasonLen-len("…") {
			sb.WriteString("…")
			break
		}
		sb.WriteString(piece)
	}
	return sb.String()
}

// isPlain reports whether text is valid UTF-8 without control characters.
func isPlain(text string) bool {
	for _, r := range text {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// unavailableError is returned for a dropped call. It matches
// ErrServiceUnavailable, and its text names the breaker and its newest
// failure reason, so that a log line says why a dependency is shed.
type unavailableError struct {
	text string // built once, when the reasons changed
}

func (e *unavailableError) Error() string { return e.text }

func (e *unavailableError) Unwrap() error { return ErrServiceUnavailable }
