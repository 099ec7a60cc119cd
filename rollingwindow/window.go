package rollingwindow

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
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

// Option configures a [RollingWindow] in [New].
type Option func(*options)

type options struct {
	ignoreCurrent bool
	clock         clock.Clock
	clockSet      bool
	start         time.Time
	startSet      bool
	bucketDone    any // a func(Bucket[T], int64) for the window's T
	clockEvery    int
	clockEverySet bool
}

// IgnoreCurrentBucket leaves the bucket now being written out of
// [RollingWindow.Totals] and [RollingWindow.Reduce], so that readers see
// only complete buckets. By default the current bucket is included.
func IgnoreCurrentBucket() Option {
	return func(o *options) { o.ignoreCurrent = true }
}

// WithClock sets the clock the window reads time from (of the clock's
// methods, the window reads Now alone): clock.NewMock() from
// github.com/benbjohnson/clock for tests, the clock type every package of
// this module takes. The default is the system clock, read through its
// monotonic reading. A nil clock makes [New] return an error.
func WithClock(c clock.Clock) Option {
	return func(o *options) { o.clock, o.clockSet = c, true }
}

// WithStart sets the instant the window's buckets are counted from, and
// its offsets measured from (see [RollingWindow.AddAtOffset]): bucket i
// covers [start + i·interval, start + (i+1)·interval). The default is the
// clock's reading when the window is made. Windows given the same start
// share their bucket boundaries and take the same offsets, so that one
// reading of the clock serves them all.
func WithStart(start time.Time) Option {
	return func(o *options) { o.start, o.startSet = start, true }
}

// OnBucketDone sets f to be called each time a bucket stops being the
// current one, with what it held and how many buckets passed after it
// without a value; a passed count of size or more means that bucket has
// left the window too (as when the window starts afresh). Buckets that
// pass empty are not reported one by one. f runs on the goroutine that
// moves the window, under the window's lock, before readers see the move:
// it must be quick and must not call the window. It lets a caller keep
// figures over the finished buckets, such as runs of buckets that agree.
func OnBucketDone[T Numeric](f func(done Bucket[T], passed int64)) Option {
	return func(o *options) { o.bucketDone = f }
}

// WithClockEvery makes [RollingWindow.Add] read the clock on one add in n
// of a lane's bucket, once the lane holds more than 32 values of the
// bucket, rather than on every add: reading the clock is most of what an
// add costs (time.Now is several times an atomic add). Light traffic, up
// to 32 values a bucket, is still placed exactly, and a busy bucket keeps
// at most n−1 values of each lane that came after its end. 1, the
// default, reads the clock on every add; n less than 1 makes [New] return
// an error. The other methods read the clock every time.
func WithClockEvery(n int) Option {
	return func(o *options) { o.clockEvery, o.clockEverySet = n, true }
}

// exactAdds is how many values a lane's bucket holds before its adds
// stop reading the clock on every add, whatever WithClockEvery says: a
// bucket of light traffic, and the add after it, are placed exactly.
const exactAdds = 32

// rebaseAfter is how far from its base a window's time may run before the
// window starts afresh from the time it is given: far beyond any real run,
// and far enough from the limits of time.Duration that no bucket arithmetic
// overflows. A clock that jumps centuries ahead, or that read the zero time
// when the window was made, gets a working window rather than a frozen one.
const rebaseAfter = time.Duration(1 << 62)

// RollingWindow sums values over the last size·interval of time, in size
// buckets of interval each. Create one with [New]; the zero value is not
// usable.
//
// Time moves forwards as the clock does. A clock that steps back by less
// than the window is taken to stand still: values go to the current bucket
// until the clock has caught up. A clock that steps back by more than the
// window, or jumps so far ahead that the bucket arithmetic would overflow,
// starts the window afresh, empty, from that time.
//
// Adding takes no lock, and neither does reading, except while the window
// moves to a new bucket, once per interval at most.
//
// A RollingWindow is safe for concurrent use by multiple goroutines.
type RollingWindow[T Numeric] struct {
	size          int64
	interval      time.Duration
	span          time.Duration // size·interval, at most rebaseAfter
	ignoreCurrent bool
	clock         clock.Clock // nil for the system clock
	float         bool        // T is a floating-point type
	clockEvery    int64       // Add reads the clock on one add in clockEvery; see WithClockEvery
	everyInverse  uint64      // ⌊(2⁶⁴−1)/clockEvery⌋+1, which due multiplies by
	bucketDone    func(done Bucket[T], passed int64)

	// start is the instant offsets are measured from. It changes only
	// when a time lies so far from it that its offset would overflow.
	start atomic.Pointer[time.Time]
	// base is the offset the buckets are counted from: bucket i covers
	// offsets [base + i·interval, base + (i+1)·interval). It is 0 until
	// the window starts afresh.
	base atomic.Int64
	// next is when the current bucket ends, as an offset from base.
	next atomic.Int64
	// seq is odd while the window moves; readers retry around it.
	seq atomic.Uint64

	// The current bucket is counted on lanes (see Lane): own until two
	// goroutines are seen adding at once, then the lanes of spread, one
	// per processor; and the lanes joined with AddLane, newest first.
	own    Lane[T]
	spread atomic.Pointer[laneSpread[T]]
	joined atomic.Pointer[Lane[T]]

	// Values are stored as bits: an int64's for integer types (which
	// wraps as the types do), a float64's for floating-point ones.
	doneSum   atomic.Uint64 // the finished buckets inside the window
	doneCount atomic.Int64

	mu      sync.Mutex  // serializes moving the window
	ring    []Bucket[T] // guarded by mu; finished bucket i at i mod size, the current bucket's slot empty
	current int64       // guarded by mu; the current bucket's number
	sum     T           // guarded by mu; sum over ring
	count   int64       // guarded by mu; count over ring
	gone    Bucket[T]   // guarded by mu; every value that has left the current bucket
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
	var o options
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("rollingwindow: nil Option")
		}
		opt(&o)
	}
	if o.clockEverySet && o.clockEvery < 1 {
		return nil, fmt.Errorf("rollingwindow: WithClockEvery(%d): must be at least 1", o.clockEvery)
	}
	if o.clockSet && isNil(o.clock) {
		return nil, errors.New("rollingwindow: WithClock(nil): clock must not be nil")
	}
	var bucketDone func(Bucket[T], int64)
	if o.bucketDone != nil {
		var ok bool
		if bucketDone, ok = o.bucketDone.(func(Bucket[T], int64)); !ok || bucketDone == nil {
			return nil, fmt.Errorf("rollingwindow: OnBucketDone: %T is not a non-nil func(Bucket[T], int64) for this window's T", o.bucketDone)
		}
	}
	var zero T
	_, isFloat32 := any(zero).(float32)
	_, isFloat64 := any(zero).(float64)
	w := &RollingWindow[T]{
		size:          int64(size),
		interval:      interval,
		span:          rebaseAfter,
		ignoreCurrent: o.ignoreCurrent,
		clock:         o.clock,
		float:         isFloat32 || isFloat64,
		bucketDone:    bucketDone,
		clockEvery:    max(int64(o.clockEvery), 1),
		ring:          make([]Bucket[T], size),
	}
	w.everyInverse = ^uint64(0)/uint64(w.clockEvery) + 1
	w.own.kind.Store(uint32(laneKindOf(w)))
	if int64(rebaseAfter/interval) >= int64(size) {
		w.span = time.Duration(size) * interval
	}
	start := o.start
	if !o.startSet {
		start = w.now()
	}
	w.start.Store(&start)
	w.next.Store(int64(interval))
	return w, nil
}

// isNil reports whether c is nil, or a nil pointer, map, func or the like
// in an interface: a clock whose Now would panic.
func isNil(c clock.Clock) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// now reads the window's clock.
func (w *RollingWindow[T]) now() time.Time {
	if w.clock == nil {
		return time.Now()
	}
	return w.clock.Now()
}

// nowOffset returns w.Offset(w.now()). On the system clock it reads
// time.Since(start), which is the same offset: with a start read from the
// system clock it reads the monotonic clock alone, half of what time.Now
// reads. A start given by WithStart, which carries no monotonic reading,
// makes time.Since read the wall clock, as Offset(time.Now()) would.
func (w *RollingWindow[T]) nowOffset() time.Duration {
	if w.clock == nil {
		if d := time.Since(*w.start.Load()); d < rebaseAfter && d > -rebaseAfter {
			return d
		}
	}
	return w.Offset(w.now())
}

// Add adds v to the bucket that covers now: its Sum grows by v and its Count
// by one. With [WithClockEvery], a busy bucket's adds read the clock only
// now and then.
func (w *RollingWindow[T]) Add(v T) {
	if w.clockEvery == 1 {
		w.AddAtOffset(w.nowOffset(), v)
		return
	}
	// The lane picked before the window moves takes the value after: a
	// move empties the lanes and leaves them in place.
	if sp := w.spread.Load(); sp != nil {
		l := sp.pick()
		if w.due(l.count()) {
			w.moveTo(w.nowOffset())
		}
		l.add(v)
		return
	}
	if w.due(w.own.count()) {
		w.moveTo(w.nowOffset())
	}
	if !w.own.tryAdd(v) { // addTo, written out
		w.spreadOut()
		w.spread.Load().pick().add(v)
	}
}

// due reports whether an add to a lane whose bucket holds held values
// reads the clock: while held is at most exactAdds (the add after a bucket
// of exactAdds values may be the first of the next bucket), then when the
// add is the lane's (held+1)-th and that is a multiple of clockEvery.
//
// The multiple is tested on the low 32 bits of held+1, by multiplying by
// everyInverse (Lemire, Kaser and Kurz, "Faster remainder by direct
// computation", 2019) rather than dividing, which was a fifth of a serial
// add. Past 2³² values in a bucket the reads stay at most clockEvery adds
// apart: the low bits wrap to 0, a multiple.
func (w *RollingWindow[T]) due(held int64) bool {
	return held <= exactAdds || uint64(uint32(held+1))*w.everyInverse <= w.everyInverse-1
}

// AddAt is [RollingWindow.Add] at time t instead of the clock's now, for a
// caller that has read the clock already (for several windows at once, say)
// or that replays values recorded with their times.
func (w *RollingWindow[T]) AddAt(t time.Time, v T) { w.AddAtOffset(w.Offset(t), v) }

// AddAtOffset is [RollingWindow.AddAt] at the instant d after the window's
// start ([RollingWindow.Start]), for a caller that keeps time as offsets
// from it, such as time.Since(start): it saves converting to a time.Time
// and back.
func (w *RollingWindow[T]) AddAtOffset(d time.Duration, v T) {
	w.moveTo(d)
	w.AddCurrent(v)
}

// Start returns the instant the window's buckets are counted from and its
// offsets are measured from: the clock's reading when the window was made,
// or the time given to [WithStart]. It changes only when the window is
// given a time more than 2⁶² ns (146 years) from it, which starts the
// window afresh from that time; a caller of the offset methods measures
// time on an axis of its own, which Start need not follow.
func (w *RollingWindow[T]) Start() time.Time { return *w.start.Load() }

// Offset returns t as an offset from the window's start, the axis the
// offset methods take, first making t the start (and starting the window
// afresh) when the offset lies more than 2⁶² ns (146 years) away either
// way, where the bucket arithmetic could overflow. The time-based methods
// read their times through it; a caller that reads a clock once for
// several windows can convert through one of them and pass the offset to
// all (which then share the first window's axis).
func (w *RollingWindow[T]) Offset(t time.Time) time.Duration {
	for {
		start := w.start.Load()
		d := t.Sub(*start)
		if d < rebaseAfter && d > -rebaseAfter {
			return d
		}
		if w.restartFrom(start, t) {
			return 0
		}
		// Another goroutine moved the start: read it again.
	}
}

// restartFrom makes t the window's start and starts the window afresh,
// unless the start is no longer old.
func (w *RollingWindow[T]) restartFrom(old *time.Time, t time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	start := new(time.Time)
	*start = t
	if !w.start.CompareAndSwap(old, start) {
		return false
	}
	w.restartLocked(0)
	return true
}

// AddCurrent adds v to the current bucket without reading the clock: the
// bucket of the newest time the window was given. It is for a caller that
// has just brought the window to now, such as a breaker recording the
// outcome of a call it admitted after reading the window; an idle window
// is not moved, so the value expires with the bucket it lands in.
//
// An add is one atomic add to the window's lane while one goroutine adds
// at a time. Once two are seen adding at once, the window spreads its
// current bucket over maxLanes lanes, each on cache lines of its own, and
// each processor adds to a lane of its own (see [Lane]).
func (w *RollingWindow[T]) AddCurrent(v T) { w.addTo(w.lane(), v) }

// Current returns the current bucket as the window stands: the bucket of
// the newest time it was given, read without the clock and without moving
// the window, as [RollingWindow.AddCurrent] adds to it. It is for a caller
// that moves the window itself, with the offset methods. A move under way
// may leave part of a value added at that moment in this bucket and part
// in the next.
func (w *RollingWindow[T]) Current() Bucket[T] { return w.currentBucket() }

// lane returns the lane the calling goroutine adds to: the window's own
// until it spread, then its processor's.
func (w *RollingWindow[T]) lane() *Lane[T] {
	if sp := w.spread.Load(); sp != nil {
		return sp.pick()
	}
	return &w.own
}

// addTo adds v to l, a lane that lane returned; on the window's own lane,
// an add that finds another goroutine adding spreads the window.
func (w *RollingWindow[T]) addTo(l *Lane[T], v T) {
	if l != &w.own {
		l.add(v)
		return
	}
	if !l.tryAdd(v) {
		w.spreadOut()
		w.spread.Load().pick().add(v)
	}
}

// currentBucket returns the current bucket: what its lanes hold now.
func (w *RollingWindow[T]) currentBucket() Bucket[T] {
	b := w.own.load()
	if sp := w.spread.Load(); sp != nil {
		for i := range sp.lanes {
			b = b.plus(sp.lanes[i].load())
		}
	}
	for l := w.joined.Load(); l != nil; l = l.next {
		b = b.plus(l.load())
	}
	return b
}

// plus returns the sum of b and o.
func (b Bucket[T]) plus(o Bucket[T]) Bucket[T] {
	return Bucket[T]{Sum: b.Sum + o.Sum, Count: b.Count + o.Count}
}

// Totals returns the sum and the count of the values added to the buckets
// still inside the window, leaving out the current bucket when the window was
// made with [IgnoreCurrentBucket]. It costs the same whatever the size.
//
// For float types the running sum is rebuilt from the buckets whenever a
// bucket expires, so rounding cannot build up beyond one bucket's interval.
func (w *RollingWindow[T]) Totals() (sum T, count int64) {
	return w.TotalsAtOffset(w.nowOffset())
}

// TotalsAt is [RollingWindow.Totals] at time t, moving the window there
// first; see [RollingWindow.AddAt].
func (w *RollingWindow[T]) TotalsAt(t time.Time) (sum T, count int64) {
	return w.TotalsAtOffset(w.Offset(t))
}

// TotalsAtOffset is [RollingWindow.Totals] at the instant d after the
// window's start; see [RollingWindow.AddAtOffset].
func (w *RollingWindow[T]) TotalsAtOffset(d time.Duration) (sum T, count int64) {
	done, cur := w.PartsAtOffset(d)
	if w.ignoreCurrent {
		return done.Sum, done.Count
	}
	return done.Sum + cur.Sum, done.Count + cur.Count
}

// Parts returns what [RollingWindow.Totals] adds up, in two parts: the
// finished buckets still inside the window, summed, and the current
// bucket. A caller that needs the totals and the newest values reads both
// at one instant.
func (w *RollingWindow[T]) Parts() (done, current Bucket[T]) {
	return w.PartsAtOffset(w.nowOffset())
}

// PartsAt is [RollingWindow.Parts] at time t, moving the window there
// first; see [RollingWindow.AddAt].
func (w *RollingWindow[T]) PartsAt(t time.Time) (done, current Bucket[T]) {
	return w.PartsAtOffset(w.Offset(t))
}

// PartsAtOffset is [RollingWindow.Parts] at the instant d after the
// window's start; see [RollingWindow.AddAtOffset].
func (w *RollingWindow[T]) PartsAtOffset(d time.Duration) (done, current Bucket[T]) {
	for {
		seq := w.seq.Load()
		if seq&1 == 0 && w.covers(d) {
			doneSum, doneCount := w.doneSum.Load(), w.doneCount.Load()
			cur := w.currentBucket()
			if w.seq.Load() == seq {
				return Bucket[T]{Sum: w.value(doneSum), Count: doneCount}, cur
			}
		}
		w.move(d)
	}
}

// Lifetime returns the sum and the count of every value ever added to the
// window, expired or not. It takes the window's lock for a moment.
func (w *RollingWindow[T]) Lifetime() Bucket[T] {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gone.plus(w.currentBucket())
}

// value decodes bits stored by the window.
func (w *RollingWindow[T]) value(bits uint64) T {
	if w.float {
		return T(math.Float64frombits(bits))
	}
	return T(int64(bits))
}

// bits encodes v as the window stores it.
func (w *RollingWindow[T]) bits(v T) uint64 {
	if w.float {
		return math.Float64bits(float64(v))
	}
	return uint64(int64(v))
}

// Reduce calls fn once for every bucket inside the window, oldest first,
// empty buckets included, leaving out the current bucket when the window was
// made with [IgnoreCurrentBucket]. fn sees a copy of the buckets taken at one
// instant, and runs without the window's lock held, so it may call back into
// the window. It allocates a copy of the buckets.
func (w *RollingWindow[T]) Reduce(fn func(b Bucket[T])) {
	d := w.nowOffset()
	snapshot := make([]Bucket[T], w.size)
	w.mu.Lock()
	w.moveLocked(d)
	oldest := w.current - w.size + 1
	for i := range snapshot {
		snapshot[i] = w.ring[mod(oldest+int64(i), w.size)]
	}
	// The current bucket's values are added outside the lock: read them
	// while the window cannot move.
	snapshot[w.size-1] = w.currentBucket()
	w.mu.Unlock()
	if w.ignoreCurrent {
		snapshot = snapshot[:w.size-1]
	}
	for _, b := range snapshot {
		fn(b)
	}
}

// moveTo brings the window to offset d, if d lies outside the current
// bucket.
func (w *RollingWindow[T]) moveTo(d time.Duration) {
	if !w.covers(d) {
		w.move(d)
	}
}

// covers reports whether the window need not move to take offset d: d
// lies in the current bucket, or before it by less than the window (a
// clock that stepped back a little). Readers check it inside their
// sequence-checked read, where base and next are consistent.
func (w *RollingWindow[T]) covers(d time.Duration) bool {
	elapsed := sinceBase(int64(d), w.base.Load())
	next := w.next.Load()
	return elapsed < next && elapsed >= next-int64(w.span)
}

// move brings the window to offset d under its lock, which also waits
// for a goroutine moving it; readers call it when they find the window
// moving or not yet at d, and read again.
func (w *RollingWindow[T]) move(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.moveLocked(d)
}

// sinceBase returns d − base, saturated at the limits of int64 (which lie
// beyond rebaseAfter either way, so that the window starts afresh).
func sinceBase(d, base int64) int64 {
	elapsed := d - base
	if (d^base) < 0 && (elapsed^d) < 0 { // overflowed
		if d < 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return elapsed
}

// moveLocked moves the window to the bucket that covers offset d:
// forwards, emptying the buckets time has passed over in at most one pass
// over them, or afresh when d lies more than a window before the current
// bucket's end or too far ahead. Callers hold w.mu.
func (w *RollingWindow[T]) moveLocked(d time.Duration) {
	elapsed := sinceBase(int64(d), w.base.Load())
	next := w.next.Load()
	switch {
	case elapsed >= int64(rebaseAfter) || elapsed < next-int64(w.span):
		w.restartLocked(d)
	case elapsed >= next:
		w.advanceLocked(elapsed / int64(w.interval))
	}
}

// advanceLocked makes bucket e, later than the current one, current.
// Callers hold w.mu.
func (w *RollingWindow[T]) advanceLocked(e int64) {
	w.seq.Add(1) // readers wait from here
	done := w.takeCurrent()
	w.gone.Sum += done.Sum
	w.gone.Count += done.Count
	gap := e - w.current
	if w.bucketDone != nil {
		w.bucketDone(done, gap-1)
	}
	if gap >= w.size { // every bucket, the one just finished too, has expired
		clear(w.ring)
		w.sum, w.count = 0, 0
	} else {
		w.ring[w.current%w.size] = done
		w.sum += done.Sum
		w.count += done.Count
		for i := w.current + 1; i <= e; i++ { // their slots held buckets that have now expired
			old := &w.ring[i%w.size]
			w.sum -= old.Sum
			w.count -= old.Count
			*old = Bucket[T]{}
		}
		if w.float { // re-sum, so that rounding does not build up
			w.sum = 0
			for _, b := range w.ring {
				w.sum += b.Sum
			}
		}
	}
	w.current = e
	w.publishLocked()
}

// takeCurrent empties the current bucket and returns what it held. An add
// racing with it may land its sum in one bucket and its count in the next;
// totals stay exact. Callers hold w.mu.
func (w *RollingWindow[T]) takeCurrent() Bucket[T] {
	b := w.own.take()
	if sp := w.spread.Load(); sp != nil {
		for i := range sp.lanes {
			b = b.plus(sp.lanes[i].take())
		}
	}
	for l := w.joined.Load(); l != nil; l = l.next {
		b = b.plus(l.take())
	}
	return b
}

// restartLocked empties the window and starts it afresh at offset d.
// Callers hold w.mu.
func (w *RollingWindow[T]) restartLocked(d time.Duration) {
	w.seq.Add(1)
	left := w.takeCurrent()
	w.gone.Sum += left.Sum
	w.gone.Count += left.Count
	if w.bucketDone != nil {
		w.bucketDone(left, w.size)
	}
	clear(w.ring)
	w.sum, w.count, w.current = 0, 0, 0
	w.base.Store(int64(d))
	w.publishLocked()
}

// publishLocked stores what readers load, and lets them read again.
// Callers hold w.mu and made seq odd.
func (w *RollingWindow[T]) publishLocked() {
	w.doneSum.Store(w.bits(w.sum))
	w.doneCount.Store(w.count)
	w.next.Store((w.current + 1) * int64(w.interval))
	w.seq.Add(1)
}

// mod is the non-negative remainder of a divided by n.
func mod(a, n int64) int64 {
	r := a % n
	if r < 0 {
		r += n
	}
	return r
}
