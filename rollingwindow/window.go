package rollingwindow

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/exp/constraints"
)

// Numeric is the set of types a [RollingWindow] can sum.
type Numeric interface {
	constraints.Integer | constraints.Float
}

// Bucket is one slice of a [RollingWindow]: the sum of the values added while
// it was current, and how many there were.
type Bucket[T Numeric] struct {
	Sum   T
	Count int64
}

// Clock is the one method a [RollingWindow] reads time through.
// github.com/benbjohnson/clock's Clock and *Mock satisfy it, and so does any
// type with a Now method.
type Clock interface {
	Now() time.Time
}

// realClock reads the system clock. time.Now carries a monotonic reading, so
// differences between its values are immune to wall-clock steps.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Option configures a [RollingWindow] in [New].
type Option func(*options)

type options struct {
	ignoreCurrent bool
	clock         Clock
}

// IgnoreCurrentBucket leaves the bucket now being written out of
// [RollingWindow.Reduce] and [RollingWindow.Totals], so that readers see
// only complete buckets. By default the current bucket is included.
func IgnoreCurrentBucket() Option {
	return func(o *options) { o.ignoreCurrent = true }
}

// WithClock sets the clock the window reads time from. The default is the
// system clock. A nil clock makes [New] return an error.
//
// A clock that steps backwards is treated as if no time had passed: the
// window stays where it is until the clock has caught up again.
func WithClock(c Clock) Option {
	return func(o *options) { o.clock = c }
}

// RollingWindow sums values over the last size·interval of time, in size
// buckets of interval each. Create one with [New]; the zero value is not
// usable.
//
// A RollingWindow is safe for concurrent use by multiple goroutines.
type RollingWindow[T Numeric] struct {
	size          int64
	interval      time.Duration
	ignoreCurrent bool
	clock         Clock
	start         time.Time // bucket boundaries are start + k·interval
	// resumOnExpire is set for float types, whose running sum would drift
	// if expired values were subtracted from it: they re-sum instead.
	resumOnExpire bool

	mu      sync.Mutex
	buckets []Bucket[T] // guarded by mu; index i holds absolute bucket i mod size
	current int64       // guarded by mu; absolute index of the bucket being written
	sum     T           // guarded by mu; sum over all buckets
	count   int64       // guarded by mu; count over all buckets
}

// New returns a window of size buckets, each spanning interval.
// It returns an error that names the argument when size is less than 1,
// interval is not positive, or an option is invalid.
func New[T Numeric](size int, interval time.Duration, opts ...Option) (*RollingWindow[T], error) {
	if size < 1 {
		return nil, fmt.Errorf("rollingwindow: size %d: must be at least 1", size)
	}
	if interval <= 0 {
		return nil, fmt.Errorf("rollingwindow: interval %v: must be positive", interval)
	}
	o := options{clock: realClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		return nil, errors.New("rollingwindow: WithClock(nil): clock must not be nil")
	}
	var zero T
	_, isFloat32 := any(zero).(float32)
	_, isFloat64 := any(zero).(float64)
	return &RollingWindow[T]{
		size:          int64(size),
		interval:      interval,
		ignoreCurrent: o.ignoreCurrent,
		clock:         o.clock,
		start:         o.clock.Now(),
		resumOnExpire: isFloat32 || isFloat64,
		buckets:       make([]Bucket[T], size),
	}, nil
}

// Add adds v to the bucket that covers now: its Sum grows by v and its Count
// by one.
func (w *RollingWindow[T]) Add(v T) {
	now := w.clock.Now()
	w.mu.Lock()
	w.advance(now)
	b := &w.buckets[w.current%w.size]
	b.Sum += v
	b.Count++
	w.sum += v
	w.count++
	w.mu.Unlock()
}

// Totals returns the sum and the count of the values added to the buckets
// still inside the window, leaving out the current bucket when the window was
// made with [IgnoreCurrentBucket]. It costs the same whatever the size.
//
// For float types the running sum is rebuilt from the buckets whenever a
// bucket expires, so rounding cannot build up beyond one bucket's interval.
func (w *RollingWindow[T]) Totals() (sum T, count int64) {
	now := w.clock.Now()
	w.mu.Lock()
	w.advance(now)
	sum, count = w.sum, w.count
	if w.ignoreCurrent {
		b := w.buckets[w.current%w.size]
		sum -= b.Sum
		count -= b.Count
	}
	w.mu.Unlock()
	return sum, count
}

// Reduce calls fn once for every bucket inside the window, oldest first,
// empty buckets included, leaving out the current bucket when the window was
// made with [IgnoreCurrentBucket]. fn sees a copy of the buckets taken at one
// instant, and runs without the window's lock held, so it may call back into
// the window.
func (w *RollingWindow[T]) Reduce(fn func(b Bucket[T])) {
	now := w.clock.Now()
	n := w.size
	if w.ignoreCurrent {
		n--
	}
	snapshot := make([]Bucket[T], n)
	w.mu.Lock()
	w.advance(now)
	oldest := w.current - w.size + 1 // may be negative early on: those buckets are empty
	for i := range snapshot {
		snapshot[i] = w.buckets[mod(oldest+int64(i), w.size)]
	}
	w.mu.Unlock()
	for _, b := range snapshot {
		fn(b)
	}
}

// advance moves the window to the bucket that covers now, emptying every
// bucket that time has passed over. A now before the current bucket (a clock
// that stepped backwards) leaves the window where it is. However long the
// gap, the work is at most one pass over the buckets. Callers hold w.mu.
func (w *RollingWindow[T]) advance(now time.Time) {
	elapsed := now.Sub(w.start)
	if elapsed < 0 {
		return
	}
	target := int64(elapsed / w.interval)
	gap := target - w.current
	if gap <= 0 {
		return
	}
	w.current = target
	if gap >= w.size {
		clear(w.buckets)
		w.sum, w.count = 0, 0
		return
	}
	for i := target - gap + 1; i <= target; i++ {
		b := &w.buckets[i%w.size]
		w.sum -= b.Sum
		w.count -= b.Count
		*b = Bucket[T]{}
	}
	if w.resumOnExpire {
		w.sum = 0
		for _, b := range w.buckets {
			w.sum += b.Sum
		}
	}
}

// mod is the non-negative remainder of a divided by n.
func mod(a, n int64) int64 {
	r := a % n
	if r < 0 {
		r += n
	}
	return r
}
