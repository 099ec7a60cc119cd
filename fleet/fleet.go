package fleet

import (
	"fmt"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/internal/evidence"
	"github.com/srebreaker/srebreaker/internal/fleethook"
)

// Member is a breaker's link to the breakers of the same dependency in
// other processes: something outside the breaker (the redisbreaker
// module, a simulation) publishes [Member.History] and feeds the other
// processes' histories, merged, back through [Member.SetOthers], in the
// background. Get a breaker's with [Of].
//
// While it holds the others' history, the breaker judges two histories
// with the one judge, every refinement included: its own, and the
// fleet's, its own buckets and the others' added up bucket by bucket
// (the others' bucket of the time of the breaker's live one added to
// it); a call is dropped with the higher of the two probabilities. A
// process whose calls fail while the rest of the fleet's succeed still
// sheds on its own evidence; a process that sees too few calls to shed
// on its own sheds on the fleet's. Two rules are the fleet's own: while
// the fleet's newest buckets agree on neither outcome (an overload), a
// process with evidence enough of its own throttles on its own window,
// not the fleet's; and once a fleet down for a window holds drops alone,
// each process probes with its share of the fleet's calls, so that the
// fleet probes as one breaker does, not with every process's next call
// (docs/design/behaviour.md, "A fleet sharing its counts"). Without the
// others' history (never set, cleared, or set more than a window ago) the
// breaker decides on its own alone, exactly as an unlinked breaker does.
//
// The call path never waits for the fleet: the fleet's history is judged
// when it is set and when a bucket finishes, and a call reads that
// judgement without a lock and without allocating.
//
// A Member is safe for concurrent use by multiple goroutines.
type Member struct{ l fleethook.Link }

// Of returns b's link to its fleet: ok is false for [breaker.Nop] and
// for implementations of breaker.Breaker other than those [breaker.New],
// [breaker.MustNew] and registries make. Every call for one breaker
// returns a link to the same state: a history set through one is seen
// through the others.
func Of(b breaker.Breaker) (m *Member, ok bool) {
	if b == nil {
		return nil, false
	}
	l, ok := fleethook.Of(b)
	if !ok {
		return nil, false
	}
	return &Member{l: l}, true
}

// Name returns the breaker's name, which names the dependency in the
// fleet.
func (m *Member) Name() string { return m.l.Name() }

// Window returns the span of the breaker's window ([breaker.WithWindow]):
// how long a history set by [Member.SetOthers] is used, and a bound on how
// stale a publisher should let it get.
func (m *Member) Window() time.Duration { return m.l.Window() }

// History returns the breaker's buckets as of now, to publish to the
// fleet: its window's finished buckets and, newest, the bucket being
// filled as it stands (the others count what it holds now, and all of it
// once it is published again), and the older blocks it reads back for on
// light traffic. Each call allocates the history.
func (m *Member) History() History {
	s := m.l.History()
	h := History{Span: time.Duration(s.Span), Size: int(s.Size), Newest: s.Newest, NewestBlock: s.NewestBlock,
		Buckets: fromEvidence(s.Buckets), Blocks: fromEvidence(s.Blocks)}
	return h
}

// SetOthers sets the history of the other processes of the fleet, merged
// ([History.Merge]): the breaker decides on it, with its own, until the
// next SetOthers, a [Member.ClearOthers], or for one window
// ([Member.Window]) from now, whichever comes first. A publisher that stops
// (its store is down, or its loop stuck) thus cannot leave the breaker on
// a stale history. Within that window the others' buckets age as the
// breaker's own do: each leaves the window when the breaker's bucket of
// the same time does.
//
// It returns an error wrapping [ErrInvalidHistory], and changes nothing,
// when others is invalid or on another grid than the breaker's (another
// bucket span, or window size: a process configured otherwise). The zero
// History says that the others hold nothing.
func (m *Member) SetOthers(others History) error {
	if err := others.check(); err != nil {
		return err
	}
	span, size := m.l.Grid()
	if !others.IsZero() && (others.Span != span || int64(others.Size) != size) {
		return fmt.Errorf("%w: buckets of %v, %d to a window; the breaker's are of %v, %d to a window",
			ErrInvalidHistory, others.Span, others.Size, span, size)
	}
	m.l.SetOthers(evidence.Shared{Span: int64(span), Size: size, Newest: others.Newest,
		Buckets: toEvidence(others.Buckets), NewestBlock: others.NewestBlock, Blocks: toEvidence(others.Blocks)})
	return nil
}

// ClearOthers forgets the history of the other processes: the breaker
// decides on its own alone until the next [Member.SetOthers].
func (m *Member) ClearOthers() { m.l.ClearOthers() }

func fromEvidence(in []evidence.Bucket) []Bucket {
	if len(in) == 0 {
		return nil
	}
	out := make([]Bucket, len(in))
	for i, b := range in {
		out[i] = Bucket(b)
	}
	return out
}

func toEvidence(in []Bucket) []evidence.Bucket {
	if len(in) == 0 {
		return nil
	}
	out := make([]evidence.Bucket, len(in))
	for i, b := range in {
		out[i] = evidence.Bucket(b)
	}
	return out
}
