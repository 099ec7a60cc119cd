package redisbreaker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
)

var (
	// ErrNotShareable is returned by [Sharer.Share] for a breaker without a
	// fleet link (see [fleet.Of]), such as [breaker.Nop].
	ErrNotShareable = errors.New("redisbreaker: breaker cannot share its history")
	// ErrClosed is returned by [Sharer.Start] and [Sharer.Share] after
	// [Sharer.Close].
	ErrClosed = errors.New("redisbreaker: sharer closed")
	// ErrUnreachable wraps the error of a round trip that failed as a
	// whole: Redis down, slow or refusing the commands.
	ErrUnreachable = errors.New("redisbreaker: Redis unreachable")
	// ErrBadData wraps the error of a breaker whose hash in Redis held
	// something the sharer cannot use: a key of another type, or values
	// it cannot parse (or whose buckets do not add up to the breaker's:
	// a process configured with another window).
	ErrBadData = errors.New("redisbreaker: unusable data in Redis")
)

// Sharer shares the bucket histories of breakers with the breakers of the
// same names in other processes, through Redis, and feeds the fleet's
// back to them ([fleet.Member]). Make one with [New], add breakers with
// [Sharer.Share], and start its loop with [Sharer.Start]; [Sharer.Close]
// stops it.
//
// A Sharer is safe for concurrent use by multiple goroutines.
type Sharer struct {
	client redis.UniversalClient
	o      options

	mu      sync.Mutex
	members map[string]*member // guarded by mu; by breaker name
	closed  bool               // guarded by mu
	cancel  context.CancelFunc // guarded by mu; stops the loop; nil until Start
	done    chan struct{}      // guarded by mu; closed when the loop has returned

	round  sync.Mutex // one round at a time; guards down, loaded and the members' round state
	down   bool       // the last round failed as a whole, and that was logged
	loaded bool       // the last round ran the v3 script: Redis has it
	batch  bool       // one MGET reads every breaker's blocks: a client of one node
}

// member is a shared breaker.
type member struct {
	b     breaker.Breaker
	fleet *fleet.Member
	key   string

	own  fleet.History // guarded by Sharer.round; what the round published in layout v3
	grid gridState     // guarded by Sharer.round; layout v4

	bad  bool // guarded by Sharer.round; the last read was unusable, and that was logged
	lost bool // guarded by Sharer.round; the breaker's node of Redis was unreachable, and that was logged

	status atomic.Pointer[Status] // what the last round learnt of the fleet
}

// New returns a sharer that keeps its state in Redis through client: a
// single node, Sentinel or Cluster client (each breaker's histories are one
// key). The caller keeps client, and closes it after [Sharer.Close]. New
// returns an error wrapping [ErrInvalidOption], naming the option and its
// value, when an option is invalid, and one when client is nil.
func New(client redis.UniversalClient, opts ...Option) (*Sharer, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: client must not be nil", ErrInvalidOption)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	_, single := client.(*redis.Client)
	return &Sharer{client: client, o: o, members: make(map[string]*member), batch: single}, nil
}

// ProcessID returns the name this process publishes its histories under; see
// [WithProcessID].
func (s *Sharer) ProcessID() string { return s.o.id }

// Share adds b to the breakers whose histories the sharer publishes under
// b.Name(), and to which it feeds the fleet's; a breaker shared before
// under the same name is replaced, and decides on its own history again.
// Sharing a breaker already shared does nothing, so a caller may share
// each breaker of a [breaker.Registry] as it gets it; a breaker that
// [breaker.Registry.Configure] replaces is to be shared again. It returns an error
// wrapping [ErrNotShareable] for a breaker without a fleet link, one for a
// name longer than 1024 bytes, and [ErrClosed] after Close.
func (s *Sharer) Share(b breaker.Breaker) error {
	link, ok := fleet.Of(b)
	if !ok {
		return fmt.Errorf("%w: %T has no fleet link", ErrNotShareable, b)
	}
	name := b.Name()
	if len(name) > maxNameSize {
		return fmt.Errorf("redisbreaker: breaker name of %d bytes: at most %d", len(name), maxNameSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if old, ok := s.members[name]; ok {
		if old.b == b {
			return nil
		}
		old.fleet.ClearOthers()
	}
	s.members[name] = &member{b: b, fleet: link, key: s.o.prefix + name, grid: newGridState(s.o.prefix, name)}
	return nil
}

// Unshare stops sharing the breaker shared under name, which decides on
// its own history again; what it added to the fleet's counters leaves the
// others' windows with the grid, and the keys expire on their own. It does
// nothing for a name not shared. A breaker shared again afterwards adds
// its window again: for a window, the fleet counts its calls twice.
func (s *Sharer) Unshare(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.members[name]; ok {
		m.fleet.ClearOthers()
		delete(s.members, name)
	}
}

// Start starts the loop that calls [Sharer.Sync] at once and then every
// period ([WithPeriod]), each round bounded by the timeout
// ([WithTimeout]), until [Sharer.Close]. Calls through the breakers never
// wait for it. It returns an error if the loop was started before, and
// [ErrClosed] after Close.
func (s *Sharer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.cancel != nil:
		return errors.New("redisbreaker: Start: the loop is already running")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	ticker := s.o.clock.Ticker(s.o.period)
	go s.loop(ctx, ticker, s.done)
	return nil
}

func (s *Sharer) loop(ctx context.Context, ticker *clock.Ticker, done chan struct{}) {
	defer close(done)
	defer ticker.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, s.o.timeout)
		_ = s.sync(rctx, false) // logged by sync
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Close stops the loop, waits for it to return, and leaves every shared
// breaker deciding on its own history. It does not close the Redis client.
// Later calls do nothing.
func (s *Sharer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.members {
		m.fleet.ClearOthers()
	}
	return nil
}

// Sync runs one round for every shared breaker, as the loop does for
// each breaker whose round is due (see [Sharer.Status]): in one pipelined
// round trip, for each breaker, it adds what the breaker counted since its
// last round to the fleet's counters on the grid of buckets (layout v4,
// see the package documentation), reads the fleet's counters back, and
// feeds the other processes' part of them to the breaker
// ([fleet.Member.SetOthers]). With [WithV3], it also publishes the
// breaker's history in layout v3 and takes, bucket by bucket, the higher of
// what the two layouts hold.
//
// When the round trip fails as a whole (Redis down, slow, or refusing),
// every breaker decides on its own history, Sync logs it once until a
// round succeeds again, which it logs too, and returns an error wrapping
// [ErrUnreachable]. A breaker whose node alone fails (a master of a
// cluster being replaced) decides on its own history until its node is
// back, and Sync returns an error wrapping ErrUnreachable for it; the other
// breakers go on. A breaker whose keys hold what the sharer cannot use (a
// key of another type, or a block longer than its window's) decides on its
// own history, is logged once, and Sync returns an error wrapping
// [ErrBadData] for it. What a breaker counted is added to the fleet's
// counters once: a round that fails after sending adds nothing again (it
// may have been counted), one that could not connect adds it next round.
func (s *Sharer) Sync(ctx context.Context) error { return s.sync(ctx, true) }

// sync runs a round for every breaker, or, with all false, for those
// whose round is due.
func (s *Sharer) sync(ctx context.Context, all bool) error {
	s.round.Lock()
	defer s.round.Unlock()
	s.mu.Lock()
	members := make([]*member, 0, len(s.members))
	for _, m := range s.members {
		members = append(members, m)
	}
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil
	}
	now := s.o.clock.Now()
	if !all {
		// A breaker is due at the tick nearest its time: the loop ticks every
		// WithPeriod, and a longer period is a whole number of ticks.
		early := now.Add(s.o.period / 2)
		members = slices.DeleteFunc(members, func(m *member) bool { return early.Before(m.grid.next) })
	}
	if len(members) == 0 {
		return nil
	}
	slices.SortFunc(members, func(a, b *member) int { return strings.Compare(a.key, b.key) })

	plans := make([]*gridPlan, len(members))
	pipe := s.client.Pipeline()
	for i, m := range members {
		plans[i] = planGrid(m)
		plans[i].queue(ctx, pipe, keyTTLv4(m.fleet.Window(), plans[i].horizon), s.batch)
	}
	if s.batch {
		var keys []string
		for _, p := range plans {
			p.readAt = len(keys)
			keys = append(keys, p.keys...)
		}
		read := pipe.MGet(ctx, keys...)
		for _, p := range plans {
			p.read = read
		}
	}
	var v3 []*redis.Cmd
	if s.o.v3 {
		var err error
		if v3, err = s.exchange(ctx, pipe, members, now, s.loaded); err != nil {
			return err // a breaker's own history is always valid
		}
	}
	failUnanswered(pipe.Exec(ctx)) // each command's error is read below
	if s.o.v3 && s.loaded && anyNoScript(v3) {
		// The script is gone (Redis restarted or flushed its scripts, or a
		// node of a cluster has not seen it): send it whole, once more.
		pipe := s.client.Pipeline()
		v3, _ = s.exchange(ctx, pipe, members, now, false)
		failUnanswered(pipe.Exec(ctx))
	}

	errs := make([]error, len(members))
	down := true
	for i, p := range plans {
		errs[i] = p.err()
		if errs[i] == nil && v3 != nil {
			errs[i] = v3[i].Err()
		}
		if errs[i] == nil || isReply(errs[i]) {
			down = false
		}
	}
	if down {
		s.loaded = false
		for i, p := range plans {
			_, _ = p.settle(now, s.o.period) // what was sent counts as added
			members[i].fleet.ClearOthers()
		}
		if !s.down {
			s.down = true
			s.o.logger.Warn("redisbreaker: Redis unreachable; breakers decide on their own histories until it is back",
				"prefix", s.o.prefix, "err", errs[0])
		}
		return fmt.Errorf("%w: %w", ErrUnreachable, errs[0])
	}
	if s.down {
		s.down = false
		s.o.logger.Info("redisbreaker: Redis reachable again; breakers decide on the fleet's histories", "prefix", s.o.prefix)
	}
	if v3 != nil {
		s.loaded = true
	}
	var out []error
	lost := false
	for i, m := range members {
		if err := s.take(m, plans[i], v3, i, now); err != nil {
			out = append(out, err)
			lost = lost || errors.Is(err, ErrUnreachable)
		}
	}
	if c, ok := s.client.(*redis.ClusterClient); ok && lost {
		// A node of the cluster is unreachable: its replica may have taken
		// over, which go-redis learns by itself only from a redirection or
		// after ten seconds.
		c.ReloadState(ctx)
	}
	return errors.Join(out...)
}

// take settles m's part of a round and feeds m the others' history.
func (s *Sharer) take(m *member, p *gridPlan, v3 []*redis.Cmd, i int, now time.Time) error {
	others, err := p.settle(now, s.o.period)
	m.grid.next = now.Add(m.grid.period)
	m.status.Store(&Status{Processes: m.grid.processes, Period: m.grid.period, Synced: m.grid.synced})
	switch {
	case err != nil && !isReply(err) && !errors.Is(err, errUnusable):
		m.fleet.ClearOthers()
		if !m.lost {
			m.lost = true
			s.o.logger.Warn("redisbreaker: Redis unreachable for a breaker; it decides on its own history until it is back",
				"key", m.grid.base, "err", err)
		}
		return fmt.Errorf("%w: key %.300q: %w", ErrUnreachable, m.grid.base, err)
	case m.lost:
		m.lost = false
		s.o.logger.Info("redisbreaker: Redis reachable again for a breaker", "key", m.grid.base)
	}
	if err == nil {
		err = s.takeOverride(m, p.override, now)
	}
	swept := true
	if err == nil && v3 != nil {
		var old fleet.History
		old, swept, err = parseResult(m, v3[i])
		if err == nil || errors.Is(err, errUnparsed) {
			others = highest(others, old)
		}
	}
	if err == nil || errors.Is(err, errUnparsed) {
		if serr := m.fleet.SetOthers(others); serr != nil {
			err = serr
		}
	}
	if err != nil && !errors.Is(err, errUnparsed) {
		m.fleet.ClearOthers()
	}
	switch {
	case err != nil:
		if !m.bad {
			m.bad = true
			s.o.logger.Warn("redisbreaker: unusable data in Redis; left out of the fleet's",
				"key", m.grid.base, "err", err)
		}
		return fmt.Errorf("%w: key %.300q: %w", ErrBadData, m.grid.base, err)
	case m.bad && swept: // only a sweep reads every process's v3 history
		m.bad = false
		s.o.logger.Info("redisbreaker: data in Redis usable again", "key", m.grid.base)
	}
	return nil
}

// exchange queues the v3 script for each member in pipe: by its SHA1
// once Redis has it (loaded), whole otherwise. It keeps what each member
// published in member.own, which reading the others' takes the grid from.
func (s *Sharer) exchange(ctx context.Context, pipe redis.Pipeliner, members []*member, now time.Time, loaded bool) ([]*redis.Cmd, error) {
	results := make([]*redis.Cmd, len(members))
	for i, m := range members {
		window := m.fleet.Window()
		m.own = m.fleet.History()
		v3, err := m.own.MarshalBinary()
		if err != nil { // a breaker's own history is always valid
			return nil, err
		}
		v2 := ""
		if s.o.v2 {
			v2 = encodeV2(now, countsV2Of(m.own))
		}
		keys := []string{m.key}
		args := []any{s.o.id, v3, v2, now.UnixMilli(), window.Milliseconds(), keyTTL(window, s.o.period).Milliseconds()}
		if loaded {
			results[i] = pipe.EvalSha(ctx, exchangeScript.Hash(), keys, args...)
		} else {
			results[i] = pipe.Eval(ctx, exchangeSource, keys, args...)
		}
	}
	return results, nil
}

// failUnanswered gives the error of a pipeline that failed to reach Redis
// to those of its commands that got no answer: go-redis leaves a command
// of a pipeline whose connection could not be made without an error.
func failUnanswered(cmds []redis.Cmder, err error) {
	if err == nil || isReply(err) {
		return
	}
	for _, c := range cmds {
		if c.Err() != nil {
			continue
		}
		switch c := c.(type) {
		case *redis.SliceCmd:
			if len(c.Val()) == 0 {
				c.SetErr(err)
			}
		case *redis.Cmd:
			if c.Val() == nil {
				c.SetErr(err)
			}
		case *redis.BoolCmd:
			c.SetErr(err) // sent again next round, which does no harm
		}
	}
}

// isReply reports whether err is an error reply of Redis to a command
// (WRONGTYPE, say), rather than a failure to reach it.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

// anyNoScript reports whether Redis did not know the script for a command.
func anyNoScript(results []*redis.Cmd) bool {
	for _, r := range results {
		if err := r.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			return true
		}
	}
	return false
}

// errUnparsed is returned by parseResult, with the others' history, when
// values of some processes could not be used and were left out.
var errUnparsed = errors.New("values of other processes could not be used")

// parseResult reads the script's reply: the others' history, whether the
// script swept the key, how many values it could not use then, and the
// field of the first of them.
func parseResult(m *member, result *redis.Cmd) (others fleet.History, swept bool, err error) {
	v, err := result.Slice()
	if err != nil {
		return fleet.History{}, false, err
	}
	if len(v) != 4 {
		return fleet.History{}, false, fmt.Errorf("the script returned %d values, not 4", len(v))
	}
	data, ok1 := v[0].(string)
	sweep, ok2 := v[1].(int64)
	bad, ok3 := v[2].(int64)
	field, ok4 := v[3].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 || bad < 0 {
		return fleet.History{}, false, fmt.Errorf("the script returned %T %T %T %T: not a history and counts", v[0], v[1], v[2], v[3])
	}
	if err := others.UnmarshalBinary([]byte(data)); err != nil {
		return fleet.History{}, false, err
	}
	if !others.IsZero() && (others.Span != m.own.Span || others.Size != m.own.Size) {
		return fleet.History{}, false, fmt.Errorf("the script returned buckets of %v, %d to a window; the breaker's are of %v, %d",
			others.Span, others.Size, m.own.Span, m.own.Size)
	}
	swept = sweep == 1
	if bad > 0 {
		return others, swept, fmt.Errorf("%w: %d of them, the first in field %.130q (unreadable, or buckets of another window)",
			errUnparsed, bad, field)
	}
	return others, swept, nil
}

// keyTTL is how long a breaker's v3 key lives without a write: two
// windows and a period, well after the histories in it went stale (one
// window).
func keyTTL(window, period time.Duration) time.Duration {
	return 2*window + period
}

// keyTTLv4 is how long a block's key lives: the blocks a breaker reads
// back (horizon), the two newest, and one more.
func keyTTLv4(window time.Duration, horizon int64) time.Duration {
	return time.Duration(horizon+3) * window
}

// Status is what a sharer learnt of a shared breaker's fleet in its last
// round.
type Status struct {
	// Processes is how many processes share the breaker: those that
	// counted themselves in its two newest blocks (a window each), the
	// larger of the two counts.
	Processes int64
	// Period is how long the sharer waits between two rounds of the
	// breaker: [WithPeriod], lengthened for a large fleet so that its
	// processes make at most 10,000 rounds a second on the breaker, up to
	// one second (see the package documentation, "Load on Redis").
	Period time.Duration
	// Synced is when the sharer last read the fleet's counters for the
	// breaker: the breaker's view of its fleet is as old as that. Zero
	// before the first round that did.
	Synced time.Time
}

// Status returns what the sharer learnt of the fleet of the breaker shared
// under name in its last round; ok is false for a name not shared, or
// shared but not yet in a round.
func (s *Sharer) Status(name string) (st Status, ok bool) {
	s.mu.Lock()
	m, ok := s.members[name]
	s.mu.Unlock()
	if !ok {
		return Status{}, false
	}
	p := m.status.Load()
	if p == nil {
		return Status{}, false
	}
	return *p, true
}
