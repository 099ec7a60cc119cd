package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/proba"
)

// start is the instant virtual time begins at.
var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// The traffic: one call every step of virtual time, 200 calls/s.
const (
	rate = 200
	step = time.Second / rate
	slot = 100 * time.Millisecond // the figures' unit, a bucket of the breaker at the defaults
)

// A scenario is healthy traffic (warm, long enough for the breaker to
// learn how long the dependency takes), a fault for span, then healed
// traffic for after. Every call the client makes gives up after timeout,
// of virtual time.
type scenario struct {
	warm, span, after time.Duration
	timeout           time.Duration
	fault             fault
}

func (s scenario) end() time.Duration { return s.warm + s.span + s.after }

// A fault is a toxic (or a disabled proxy) and what it does to an admitted
// call in virtual time.
type fault struct {
	name    string
	on, off func(p *proxy)
	// hangs: an admitted call gets no answer; it ends when its client
	// gives up.
	hangs bool
	// latency draws the virtual time an admitted call takes while the fault
	// lasts; nil for normal.
	latency func(r *rand.Rand) time.Duration
	// opts are options of the breakers, for the fault a scenario looks at.
	opts []breaker.Option
}

// normal draws the virtual time a call of the healthy dependency takes:
// 10 to 60 ms.
func normal(r *rand.Rand) time.Duration {
	return 10*time.Millisecond + time.Duration(r.Int64N(int64(50*time.Millisecond)))
}

// phase tells which part of a scenario a call was made in.
type phase int

const (
	warm phase = iota
	faulty
	healed
)

// call is one call of a scenario, and the events the driver waits on.
type call struct {
	id    int
	at    time.Duration // when it was made, in virtual time since start
	phase phase
	ctx   *deadlineCtx

	deadline time.Duration // at + the client's timeout
	release  time.Duration // when its answer is let through to the integration
	hung     bool          // it never gets an answer

	admitOnce  sync.Once
	answerOnce sync.Once
	finishOnce sync.Once
	admitted   chan struct{} // closed when the integration let it through to the dependency
	answered   chan struct{} // closed when the network answered (or failed)
	releaseCh  chan struct{} // closed by the driver at release
	returned   chan struct{} // closed when the caller's call returned
	serverDone chan struct{} // closed when the server-side integration recorded it; nil on the client side

	err     error // what the caller got; read after returned
	dropped bool  // it returned without reaching the dependency
}

// deadlineCtx is a call's context. It is done when the driver says its
// virtual deadline has passed, with context.DeadlineExceeded, as when a
// client's timeout ends a call; it has no deadline of its own in real time.
type deadlineCtx struct {
	context.Context // values only; never done
	done            chan struct{}
	once            sync.Once
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (c *deadlineCtx) expire() { c.once.Do(func() { close(c.done) }) }

// callKey is the context key of a call's id.
type callKey struct{}

// callID returns the id of the call ctx belongs to, or -1.
func callID(ctx context.Context) int {
	if id, ok := ctx.Value(callKey{}).(int); ok {
		return id
	}
	return -1
}

// integration is what a test of one integration gives the harness.
type integration struct {
	// do makes call id with ctx through the integration and returns the
	// caller's error.
	do func(ctx context.Context, id int) error
	// serverSide: the integration is a server's; the harness then waits for
	// its record (see harness.finished) as well as for the client.
	serverSide bool
	// ready, when not nil, returns once the client can reach the
	// dependency again after a fault ends (a gRPC connection's reconnect).
	ready func()
}

// harness drives a scenario through one integration: it makes the calls,
// moves the mock clock, ends calls at their virtual deadline, and lets
// answers through at their virtual release.
type harness struct {
	t     *testing.T
	clock *clock.Mock
	reg   *breaker.Registry
	rng   *rand.Rand

	mu    sync.Mutex
	calls map[int]*call // guarded by mu
}

// newHarness returns a harness whose registry's breakers read its mock
// clock and a seeded source, with the fault's options.
func newHarness(t *testing.T, f fault) *harness {
	mock := clock.NewMock()
	mock.Set(start)
	opts := append([]breaker.Option{breaker.WithClock(mock), breaker.WithProba(proba.NewSeeded(1))}, f.opts...)
	return &harness{t: t, clock: mock, reg: breaker.MustNewRegistry(opts...), rng: rand.New(rand.NewPCG(1, 2)),
		calls: map[int]*call{}}
}

func (h *harness) get(id int) *call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[id]
}

// admit notes that the integration let call id through to the
// dependency. Integrations' inner hooks call it; it may be called more than
// once per call (a connect, then a query).
func (h *harness) admit(id int) {
	if c := h.get(id); c != nil {
		c.admitOnce.Do(func() { close(c.admitted) })
	}
}

// answer notes that the network answered call id, then holds the answer
// until the driver lets it through at the call's virtual release, or until
// ctx is done: the virtual time the call takes. Integrations' inner hooks
// call it once the dependency answered, before the integration sees the
// answer; a second call holds it again.
func (h *harness) answer(ctx context.Context, id int) {
	c := h.get(id)
	if c == nil {
		return
	}
	c.answerOnce.Do(func() { close(c.answered) })
	select {
	case <-c.releaseCh:
	case <-ctx.Done():
	}
}

// finished notes that a server-side integration recorded call id.
func (h *harness) finished(id int) {
	if c := h.get(id); c != nil && c.serverDone != nil {
		c.finishOnce.Do(func() { close(c.serverDone) })
	}
}

// figures are what a scenario measured.
type figures struct {
	calls, admitted, dropped, failed [3]int // per phase; failed: admitted calls that ended in an error
	peak                             int    // admitted calls in flight at most
	shedAfter, admittedAfter         time.Duration
	reachedBeforeShed                int            // the fault's calls before shedAfter that reached the dependency
	reachedShed                      float64        // the share of the fault's calls after shedAfter that reached the dependency
	earlyHung                        int            // calls of a hang that the network ended before it healed
	errs                             map[string]int // the errors of failed calls (and of calls dropped while warm), by phase and text
}

// never is shedAfter or admittedAfter when the share was never reached.
const never = time.Duration(-1)

// reached is the share of the fault's calls that reached the dependency.
func (f *figures) reached() float64 {
	return float64(f.admitted[faulty]) / float64(max(f.calls[faulty], 1))
}

func (f *figures) String() string {
	return fmt.Sprintf("calls %v, dropped %v, failed %v (warm, fault, healed) %v; reached %.1f %% of the fault's calls; "+
		"%.1f %% once shed; in flight at peak %d; 90 %% shed after %v; 95 %% admitted after healing %v; hung calls ended early %d",
		f.calls, f.dropped, f.failed, f.errs, 100*f.reached(), 100*f.reachedShed, f.peak, f.shedAfter, f.admittedAfter, f.earlyHung)
}

// run drives scenario s through in: a call every step, the fault on from
// s.warm to s.warm+s.span. Each admitted call takes a drawn virtual time
// (normal, or the fault's latency), and a call that hangs ends at its
// deadline. The driver waits for events (a call admitted, answered,
// returned), never for time to pass: each call is admitted or dropped
// before the next is made, and recorded before the clock passes its end,
// so the breakers see the same sequence on every run.
func (h *harness) run(s scenario, in integration, p *proxy) *figures {
	h.t.Helper()
	var (
		fig         figures
		all         []*call
		outstanding []*call
	)
	settle := func(now time.Duration) {
		kept := outstanding[:0]
		for _, c := range outstanding {
			switch {
			case !c.hung && c.release <= now:
				close(c.releaseCh)
			case c.deadline <= now:
				c.ctx.expire()
			default:
				kept = append(kept, c)
				continue
			}
			h.wait(c)
		}
		outstanding = kept
	}
	// quiesce waits until the network has answered every call that is to
	// get an answer, so that a fault begins or ends between calls.
	quiesce := func() {
		for _, c := range outstanding {
			if !c.hung {
				h.await(c.answered, c, "answered")
			}
		}
	}
	for i := range int(s.end() / step) {
		at := time.Duration(i) * step
		if i > 0 {
			h.clock.Add(step)
		}
		switch at {
		case s.warm:
			quiesce()
			s.fault.on(p)
		case s.warm + s.span:
			for _, c := range outstanding {
				if c.hung && closed(c.answered) {
					fig.earlyHung++
				}
			}
			quiesce()
			s.fault.off(p)
			if in.ready != nil {
				in.ready()
			}
		}
		settle(at)
		ph := warm
		if at >= s.warm+s.span {
			ph = healed
		} else if at >= s.warm {
			ph = faulty
		}
		c := h.issue(in, i, at, ph, s)
		all = append(all, c)
		if !c.dropped {
			outstanding = append(outstanding, c)
			fig.peak = max(fig.peak, len(outstanding))
		}
	}
	// The calls still out get their answer, or give up if none is coming.
	for _, c := range outstanding {
		if c.hung {
			c.ctx.expire()
		} else {
			close(c.releaseCh)
		}
		h.wait(c)
	}
	fig.add(all, s)
	return &fig
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// issue makes call i at virtual time at and returns it once the
// integration let it through to the dependency, or once it returned
// without, dropped.
func (h *harness) issue(in integration, i int, at time.Duration, ph phase, s scenario) *call {
	c := &call{
		id: i, at: at, phase: ph,
		ctx:       &deadlineCtx{Context: context.WithValue(context.Background(), callKey{}, i), done: make(chan struct{})},
		deadline:  at + s.timeout,
		admitted:  make(chan struct{}),
		answered:  make(chan struct{}),
		releaseCh: make(chan struct{}),
		returned:  make(chan struct{}),
	}
	switch {
	case ph == faulty && s.fault.hangs:
		c.hung = true
	case ph == faulty && s.fault.latency != nil:
		c.release = at + s.fault.latency(h.rng)
	default:
		c.release = at + normal(h.rng)
	}
	if in.serverSide {
		c.serverDone = make(chan struct{})
	}
	h.mu.Lock()
	h.calls[i] = c
	h.mu.Unlock()
	go func() {
		c.err = in.do(c.ctx, i)
		close(c.returned)
	}()
	select {
	case <-c.admitted:
		return c
	case <-c.returned:
	case <-time.After(time.Minute):
		h.t.Fatalf("call %d made at %v neither let through nor returned after a minute", i, at)
	}
	// It returned first, so it was not admitted: an admitted call waits
	// for its release.
	require.False(h.t, closed(c.admitted), "call %d returned while admitted before its release: %v", i, c.err)
	h.wait(c)
	c.dropped = true
	return c
}

// await waits for ch, failing the test after a minute of real time: a
// bound on a bug, never reached by calls that work.
func (h *harness) await(ch <-chan struct{}, c *call, what string) {
	h.t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		h.t.Fatalf("call %d made at %v (phase %d, hung %v) not %s after a minute", c.id, c.at, c.phase, c.hung, what)
	}
}

// wait waits until c has returned, and been recorded by a server-side
// integration.
func (h *harness) wait(c *call) {
	h.await(c.returned, c, "returned")
	if c.serverDone != nil {
		h.await(c.serverDone, c, "recorded by the server")
	}
}

// noteErr counts c's error in f.errs, under c's phase and how it ended
// (dropped, failed).
func (f *figures) noteErr(c *call, how string) {
	if f.errs == nil {
		f.errs = map[string]int{}
	}
	msg := fmt.Sprint(c.err)
	if len(msg) > 80 {
		msg = msg[:80]
	}
	f.errs[fmt.Sprintf("%d %s: %s", c.phase, how, msg)]++
}

// add counts the calls of a run.
func (f *figures) add(all []*call, s scenario) {
	nslots := int((s.end() + slot - 1) / slot)
	calls, dropped := make([]int, nslots), make([]int, nslots)
	for _, c := range all {
		f.calls[c.phase]++
		k := int(c.at / slot)
		calls[k]++
		if c.dropped {
			f.dropped[c.phase]++
			dropped[k]++
			if c.phase == warm { // no scenario drops a call then: say why
				f.noteErr(c, "dropped")
			}
			continue
		}
		f.admitted[c.phase]++
		if c.err != nil {
			f.failed[c.phase]++
			f.noteErr(c, "failed")
		}
	}
	// sustained: from slot from on, the first slot from which share of the
	// calls were dropped (or, with admit, admitted) in 3 slots in a row
	// (slots without calls skipped), as docs/design/behaviour.md measures; the time
	// from the slot from to the end of that slot.
	sustained := func(from, to int, share float64, admit bool) time.Duration {
		for k := from; k < to; k++ {
			run := 0
			for j := k; j < to && run < 3; j++ {
				if calls[j] == 0 {
					continue
				}
				n := dropped[j]
				if admit {
					n = calls[j] - dropped[j]
				}
				if float64(n) < share*float64(calls[j]) {
					break
				}
				run++
			}
			if run == 3 {
				return time.Duration(k-from+1) * slot
			}
		}
		return never
	}
	faultSlot, healSlot := int(s.warm/slot), int((s.warm+s.span)/slot)
	f.shedAfter = sustained(faultSlot, healSlot, 0.9, false)
	if f.shedAfter != never {
		shed := faultSlot + int(f.shedAfter/slot)
		n, d := 0, 0
		for k := faultSlot; k < shed; k++ {
			n, d = n+calls[k], d+dropped[k]
		}
		f.reachedBeforeShed = n - d
		n, d = 0, 0
		for k := shed; k < healSlot; k++ {
			n, d = n+calls[k], d+dropped[k]
		}
		f.reachedShed = float64(n-d) / float64(max(n, 1))
	}
	f.admittedAfter = sustained(healSlot, nslots, 0.95, true)
}
