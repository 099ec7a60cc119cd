package grpcbreaker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/srebreaker/srebreaker"
)

// tally counts what is reported on its promises: the breaker's, and the
// one its Answered returns.
type tally struct{ answers, outcomes, onAnswered atomic.Int64 }

type tallyPromise struct {
	t        *tally
	answered bool
}

func (p tallyPromise) Accept() { p.Reject("") }

func (p tallyPromise) Reject(string) {
	p.t.outcomes.Add(1)
	if p.answered {
		p.t.onAnswered.Add(1)
	}
}

func (p tallyPromise) Answered() srebreaker.Promise {
	p.t.answers.Add(1)
	return tallyPromise{t: p.t, answered: true}
}

// The goroutines of a stream (the caller's, the one awaiting the header,
// the context's) mark it answered and take it at once: it is answered at
// most once, recorded exactly once, and, once answered, on the promise
// Answered returned.
func TestStreamCall_answerAndTakeAtOnce(t *testing.T) {
	for range 200 {
		var n tally
		c := &streamCall{p: tallyPromise{t: &n}}
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					c.answer()
				} else if p := c.take(); p != nil {
					p.Accept()
				}
			}()
		}
		wg.Wait()
		assert.LessOrEqual(t, n.answers.Load(), int64(1), "answered at most once")
		assert.Equal(t, int64(1), n.outcomes.Load(), "recorded once")
		assert.Equal(t, n.answers.Load(), n.onAnswered.Load(), "on the answered promise once answered")
		c.answer()
		assert.Nil(t, c.take(), "taken once")
	}
}

// A promise that cannot be marked answered records the stream when it
// ends.
func TestStreamCall_plainPromise(t *testing.T) {
	var p struct{ srebreaker.Promise }
	c := &streamCall{p: p}
	c.answer()
	assert.Equal(t, srebreaker.Promise(p), c.take())
}

// blockingPromise's Answered waits for release, after telling entered.
type blockingPromise struct {
	tallyPromise
	entered chan<- struct{}
	release <-chan struct{}
}

func (p blockingPromise) Answered() srebreaker.Promise {
	p.entered <- struct{}{}
	<-p.release
	return p.tallyPromise.Answered()
}

// A call that another goroutine is marking answered (the header's watch)
// is marked when answer returns on the caller's (a message read): answer
// waits for the mark under way.
func TestStreamCall_answerWaitsForTheMarkUnderWay(t *testing.T) {
	var n tally
	entered, release := make(chan struct{}), make(chan struct{})
	c := &streamCall{p: blockingPromise{tallyPromise: tallyPromise{t: &n}, entered: entered, release: release}}
	go c.answer() // the header's watch
	<-entered
	done := make(chan struct{})
	go func() { c.answer(); close(done) }() // a message read
	select {
	case <-done:
		t.Fatal("answer returned while the mark was under way")
	case <-time.After(10 * time.Millisecond): // a window for the bug to show, not a wait the test needs
	}
	close(release)
	<-done
	assert.Equal(t, int64(1), n.answers.Load(), "marked once, and before answer returned")
}
