package rollingwindow

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Lane is a share of a window's current bucket. Adding to a lane is one
// atomic add (two for a value other than 0 and 1, a compare-and-swap loop
// for floating-point types), with no clock read and no lock; the window
// adds its lanes up whenever it is read, and empties them when it moves
// to a new bucket.
//
// A window counts on lanes of its own: one, until two goroutines are seen
// adding at once, then one per processor (see [RollingWindow.AddCurrent]).
// A caller that spreads its own writers already, over stripes of its own
// state, joins a lane to a window of an integer type per stripe with
// [RollingWindow.AddLane] and adds to it directly: the add then touches
// only memory the stripe's writers touch, with nothing to pick, and
// [Lane.Add] is inlined where it is called.
//
// The zero Lane is ready to join a window. A Lane must not be copied
// after it joined one.
type Lane[T Numeric] struct {
	// Values are stored as bits: an int64's for integer types (which
	// wraps as the types do), a float64's for floating-point ones.
	//
	// The lane's count is sum + rest for integer types, so that adding
	// a 1 or a 0 (a success or a failure, to a breaker) is one atomic
	// add, seen whole by readers; rest is the count itself for
	// floating-point types.
	sum  atomic.Uint64
	rest atomic.Int64
	// next is the lane joined before this one; set before the lane is
	// published.
	next *Lane[T]
	// kind is a laneKind: laneUnjoined until the lane joined a window,
	// then what the window sums. AddLane claims a lane by setting it.
	kind atomic.Uint32
}

// laneKind says whether a lane joined a window, and what the window sums.
type laneKind uint8

const (
	laneUnjoined laneKind = iota
	laneInteger
	laneFloat
)

// kindOf returns the lane's kind.
func (l *Lane[T]) kindOf() laneKind { return laneKind(l.kind.Load()) }

// laneKindOf returns the kind of a lane of w.
func laneKindOf[T Numeric](w *RollingWindow[T]) laneKind {
	if w.float {
		return laneFloat
	}
	return laneInteger
}

// laneFields is the size of a Lane, which paddedLane pads.
const laneFields = 32

// paddedLane keeps a lane on a pair of cache lines of its own: the
// processors fetch lines in pairs, and two lanes sharing a pair bounce
// between cores as one line does.
type paddedLane[T Numeric] struct {
	Lane[T]
	_ [128 - laneFields]byte
}

// maxLanes is how many lanes a contended window counts on.
const maxLanes = 8

// laneSpread is the lanes of a contended window. A sync.Pool keeps a lane
// per processor: Get hands a processor the lane it put back last, so that
// the goroutines running on one processor add to one lane, without
// reaching into the runtime. Lanes are handed out in turn the first time a
// processor asks, and again after a garbage collection empties the pool.
type laneSpread[T Numeric] struct {
	lanes  *[maxLanes]paddedLane[T]
	handed atomic.Uint32 // how many lanes the pool has handed out
	pool   sync.Pool     // of *Lane[T]
}

// pick returns the lane of the calling goroutine's processor.
func (sp *laneSpread[T]) pick() *Lane[T] {
	l := sp.pool.Get().(*Lane[T])
	sp.pool.Put(l)
	return l
}

// spreadOut spreads w's current bucket over lanes, once.
func (w *RollingWindow[T]) spreadOut() {
	if w.spread.Load() != nil {
		return
	}
	sp := &laneSpread[T]{lanes: new([maxLanes]paddedLane[T])}
	for i := range sp.lanes {
		sp.lanes[i].kind.Store(uint32(laneKindOf(w)))
	}
	sp.pool.New = func() any {
		return &sp.lanes[(sp.handed.Add(1)-1)%maxLanes].Lane
	}
	w.spread.CompareAndSwap(nil, sp)
}

// ErrLaneJoined is returned by [RollingWindow.AddLane] for a lane that
// joined a window already.
var ErrLaneJoined = errors.New("rollingwindow: lane already joined a window")

// AddLane joins l to w: from now on what is added to l counts in w's
// current bucket. Lanes join windows of integer types, whose adds are one
// atomic add (see Lane.Add); a floating-point window's adds are a
// compare-and-swap loop, which its own lanes take care of
// ([RollingWindow.AddCurrent]). AddLane returns an error for a window of a
// floating-point type and for a nil l, and [ErrLaneJoined] when l joined
// a window before, this one or another. A lane stays joined as long as
// the window lives. AddLane is safe to call from several goroutines at
// once, with one lane for several windows too: one window joins it.
func (w *RollingWindow[T]) AddLane(l *Lane[T]) error {
	if l == nil {
		return errors.New("rollingwindow: AddLane(nil): lane must not be nil")
	}
	if w.float {
		var zero T
		return fmt.Errorf("rollingwindow: AddLane: lanes join windows of integer types, not %T", zero)
	}
	// The first AddLane given the lane claims it, so that two windows
	// given one lane at once never both link it.
	if !l.kind.CompareAndSwap(uint32(laneUnjoined), uint32(laneInteger)) {
		return ErrLaneJoined
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	l.next = w.joined.Load()
	w.joined.Store(l)
	return nil
}

// Add adds v to the current bucket of the window l joined: its sum grows
// by v and its count by one, with one atomic add for a 1 or a 0, two for
// another value. It does not read the clock: like
// [RollingWindow.AddCurrent], it counts in the bucket of the newest time
// the window was given. It is small enough to be inlined where it is
// called. Adding to a lane that joined no window panics.
func (l *Lane[T]) Add(v T) {
	if l.kind.Load() != uint32(laneInteger) {
		panic("rollingwindow: Add on a Lane that joined no window (see RollingWindow.AddLane)")
	}
	if v != 0 {
		l.sum.Add(uint64(int64(v)))
	}
	if v != 1 {
		l.rest.Add(1 - int64(v))
	}
}

// add is Add for the window's own lanes, of either kind.
func (l *Lane[T]) add(v T) {
	if l.kindOf() == laneFloat {
		l.addFloat(v)
		return
	}
	l.Add(v)
}

// tryAdd is Add for the window's own lane, by compare-and-swap: it
// reports false, and adds nothing, when another goroutine changed the
// counter first, which the window takes for contention. The first word
// an add writes is the one swapped: rest for a 0, which touches nothing
// else, and sum otherwise, for floating-point types too.
func (l *Lane[T]) tryAdd(v T) bool {
	if l.kindOf() == laneFloat {
		old := l.sum.Load()
		sum := math.Float64bits(math.Float64frombits(old) + float64(v))
		if !l.sum.CompareAndSwap(old, sum) {
			return false
		}
		l.rest.Add(1)
		return true
	}
	if v == 0 {
		old := l.rest.Load()
		return l.rest.CompareAndSwap(old, old+1)
	}
	old := l.sum.Load()
	if !l.sum.CompareAndSwap(old, old+uint64(int64(v))) {
		return false
	}
	if v != 1 {
		l.rest.Add(1 - int64(v))
	}
	return true
}

// addFloat adds v to a lane of a floating-point window.
func (l *Lane[T]) addFloat(v T) {
	for {
		old := l.sum.Load()
		sum := math.Float64bits(math.Float64frombits(old) + float64(v))
		if l.sum.CompareAndSwap(old, sum) {
			break
		}
	}
	l.rest.Add(1)
}

// count returns how many values the lane holds.
func (l *Lane[T]) count() int64 {
	if l.kindOf() == laneFloat {
		return l.rest.Load()
	}
	return int64(l.sum.Load()) + l.rest.Load()
}

// load returns the lane's share of the current bucket.
func (l *Lane[T]) load() Bucket[T] { return l.decode(l.sum.Load(), l.rest.Load()) }

// take empties the lane and returns what it held. An add racing with it
// may land its sum in one bucket and its count in the next; totals stay
// exact.
func (l *Lane[T]) take() Bucket[T] { return l.decode(l.sum.Swap(0), l.rest.Swap(0)) }

// decode decodes a lane's stored sum and rest.
func (l *Lane[T]) decode(sumBits uint64, rest int64) Bucket[T] {
	if l.kindOf() == laneFloat {
		return Bucket[T]{Sum: T(math.Float64frombits(sumBits)), Count: rest}
	}
	return Bucket[T]{Sum: T(int64(sumBits)), Count: int64(sumBits) + rest}
}
