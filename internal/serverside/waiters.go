package serverside

import (
	"sync"
	"time"

	"github.com/srebreaker/srebreaker/criticality"
)

// A waiter's states.
const (
	waiting  int8 = iota
	granted       // handed a slot
	rejected      // rejected to make room, or by overload
)

// waiter is a call waiting in a Limiter's queue. Its state is guarded by
// the Limiter's mu until done is sent on, and the call's own after.
type waiter struct {
	done       chan struct{} // buffered: sent on once, by the Limiter
	state      int8
	level      criticality.Level
	since      time.Time // when it began to wait
	prev, next *waiter
}

// waiters pools waiters, so that a call that waits allocates nothing in
// the steady state.
var waiters = sync.Pool{New: func() any { return &waiter{done: make(chan struct{}, 1)} }}

func getWaiter(level criticality.Level, now time.Time) *waiter {
	w := waiters.Get().(*waiter)
	w.state, w.level, w.since = waiting, level, now
	return w
}

// putWaiter pools w, whose done has been received from or never sent on.
func putWaiter(w *waiter) {
	w.prev, w.next = nil, nil
	waiters.Put(w)
}

// waitList is a doubly linked list of waiters, oldest first. The zero
// value is empty.
type waitList struct {
	head, tail *waiter
	len        int
}

func (q *waitList) pushBack(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.len++
}

func (q *waitList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	q.len--
}

func (q *waitList) popFront() *waiter {
	w := q.head
	q.remove(w)
	return w
}

func (q *waitList) popBack() *waiter {
	w := q.tail
	q.remove(w)
	return w
}
