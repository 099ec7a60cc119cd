package breaker

import (
	"sync"

	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/internal/retrybudget"
)

// The retry budget (package retry's Budget) is kept on the breaker's own
// window: the calls it allows a share of are the window's admitted calls,
// and the retries it grants are counted on the window's buckets, numbered
// as the breaker numbers them and read on the breaker's clock. One window,
// one clock: the budget and the drop probability cannot disagree on what
// the last window held. Nothing of it is on the call path: Allow and
// Accept neither read nor write it, and a breaker that is never asked for
// a retry keeps nothing for it.
func init() {
	retrybudget.Take = func(b any, ratio float64, floor int) (bool, bool) {
		g, ok := b.(*googleBreaker)
		if !ok {
			return false, false
		}
		return g.takeRetry(ratio, floor), true
	}
}

// retryTally counts the retries granted per bucket of the window.
type retryTally struct {
	mu sync.Mutex
	// numbers and counts have a slot per bucket of the window, made at the
	// first retry: the retries granted in the bucket of that number.
	numbers []int64 // guarded by mu
	counts  []int64 // guarded by mu
}

// takeRetry grants one retry when the retries granted in the window are
// fewer than max(floor, ratio × the window's admitted calls), and counts
// it in the live bucket.
func (b *googleBreaker) takeRetry(ratio float64, floor int) bool {
	b.advanceIfDue()
	live := b.liveNumber()
	t := &b.retries
	t.mu.Lock()
	defer t.mu.Unlock()
	retries := t.sumLocked(live, b.window/b.span)
	calls := b.windowCalls()
	if float64(retries) >= max(float64(floor), ratio*float64(calls)) {
		return false
	}
	i := live % int64(len(t.counts))
	if i < 0 {
		i += int64(len(t.counts))
	}
	if t.numbers[i] != live {
		t.numbers[i], t.counts[i] = live, 0
	}
	t.counts[i]++
	return true
}

// retryWindow returns the retries granted in the window and the window's
// admitted calls.
func (b *googleBreaker) retryWindow() (retries, calls int64) {
	live := b.liveNumber()
	t := &b.retries
	t.mu.Lock()
	retries = t.sumLocked(live, b.window/b.span)
	t.mu.Unlock()
	return retries, b.windowCalls()
}

// liveNumber is the number of the live bucket, on the breaker's time axis.
func (b *googleBreaker) liveNumber() int64 {
	return floorDiv(b.bucketEnd.Load(), b.span) - 1
}

// sumLocked returns the retries granted in the n buckets up to live, making
// the slots at the first call. Callers hold t.mu.
func (t *retryTally) sumLocked(live, n int64) int64 {
	if t.counts == nil {
		t.numbers, t.counts = make([]int64, n), make([]int64, n)
		for i := range t.numbers {
			t.numbers[i] = live - n - 1 // none in the window
		}
	}
	var sum int64
	for i, num := range t.numbers {
		if num <= live && num > live-n {
			sum += t.counts[i]
		}
	}
	return sum
}

// windowCalls returns the admitted calls in the window: the finished
// buckets' and the live bucket's, of every level.
func (b *googleBreaker) windowCalls() int64 {
	var live evidence.Bucket
	if lv := b.levels.Load(); lv != nil {
		for _, x := range lv {
			live = live.Plus(x.counts.sum())
		}
	} else {
		live = b.counts.sum()
	}
	return b.judged.Load().sum.Window.Admitted() + live.Admitted()
}
