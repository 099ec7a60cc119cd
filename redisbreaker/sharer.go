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
	// ErrNotShared is wrapped by the error of [Sharer.Status] for a name
	// the sharer does not share.
	ErrNotShared = errors.New("redisbreaker: no breaker shared under that name")
	// ErrClosed is wrapped by the error of every method of a [Sharer]
	// called after [Sharer.Close], the second Close included; none of them
	// touches Redis then.
	ErrClosed = errors.New("redisbreaker: sharer closed")
	// ErrUnreachable wraps the error of a round, or of the part of a round
	// on one shard of a Redis Cluster, that did not reach Redis: Redis
	// down, slower than [WithTimeout], or refusing the commands (a
	// redirection, a cluster without a master for the slot).
	ErrUnreachable = errors.New("redisbreaker: Redis unreachable")
	// ErrBadData wraps the error of a breaker whose keys in Redis held
	// something the sharer cannot use: a key of another type, a block
	// longer than its window's, counts beyond what the fleet could have
	// counted, or an override it cannot read.
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
	client  redis.UniversalClient
	o       options
	batch   bool // one MGET reads every breaker's blocks: a client of one node
	cluster bool // a Redis Cluster: each round talks to each shard on its own

	mu      sync.Mutex
	members map[string]*member // guarded by mu; by breaker name
	closed  bool               // guarded by mu
	cancel  context.CancelFunc // guarded by mu; stops the loop; nil until Start
	done    chan struct{}      // guarded by mu; closed when the loop has returned
	busy    map[string]bool    // guarded by mu; shards whose exchange a round gave up waiting for, still running
	pending sync.WaitGroup     // go-redis calls still running; Add under mu while not closed

	round   chan struct{}   // holds a token while a round runs: one round at a time
	down    map[string]bool // guarded by round; shards ("" for a client of one node) whose failure was logged
	refused map[string]bool // guarded by round; shards that refused the connection in their last round
}

// member is a shared breaker.
type member struct {
	b     breaker.Breaker
	fleet *fleet.Member

	grid gridState // guarded by Sharer.round

	bad  bool // guarded by Sharer.round; the last read was unusable, and that was logged
	lost bool // guarded by Sharer.round; the breaker's shard of Redis was unreachable in its last round

	status atomic.Pointer[Status] // what the last round learnt of the fleet
}

// New returns a sharer that keeps its state in Redis through client: a
// single node, Sentinel, Ring or Cluster client (a breaker's keys share one
// slot). The caller keeps client, and closes it after [Sharer.Close]. New
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
	_, cluster := client.(*redis.ClusterClient)
	return &Sharer{client: client, o: o, batch: single, cluster: cluster, members: make(map[string]*member),
		busy: make(map[string]bool), round: make(chan struct{}, 1), down: make(map[string]bool),
		refused: make(map[string]bool)}, nil
}

// closedErr returns the error of method called after Close.
func closedErr(method string) error { return fmt.Errorf("%w: %s", ErrClosed, method) }

// Share adds b to the breakers whose histories the sharer adds to the
// fleet's under b.Name(), and to which it feeds the fleet's; a breaker
// shared before under the same name is replaced, and decides on its own
// history again. Sharing a breaker already shared does nothing, so a
// caller may share each breaker of a [breaker.Registry] as it gets it; a
// breaker that [breaker.Registry.Configure] replaces is to be shared
// again. It returns an error wrapping [ErrNotShareable] for a breaker
// without a fleet link, one for a name longer than 1024 bytes, and one
// wrapping [ErrClosed] after Close.
func (s *Sharer) Share(b breaker.Breaker) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return closedErr("Share")
	}
	link, ok := fleet.Of(b)
	if !ok {
		return fmt.Errorf("%w: %T has no fleet link", ErrNotShareable, b)
	}
	name := b.Name()
	if len(name) > maxNameSize {
		return fmt.Errorf("redisbreaker: breaker name of %d bytes: at most %d", len(name), maxNameSize)
	}
	if old, ok := s.members[name]; ok {
		if old.b == b {
			return nil
		}
		old.fleet.ClearOthers()
	}
	s.members[name] = &member{b: b, fleet: link, grid: newGridState(s.o.prefix, name)}
	return nil
}

// Unshare stops sharing the breaker shared under name, which decides on
// its own history again; what it added to the fleet's counters leaves the
// others' windows with the grid, and the keys expire on their own. It does
// nothing for a name not shared. A breaker shared again afterwards adds
// its window again: for a window, the fleet counts its calls twice. It
// returns an error wrapping [ErrClosed] after Close.
func (s *Sharer) Unshare(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return closedErr("Unshare")
	}
	if m, ok := s.members[name]; ok {
		m.fleet.ClearOthers()
		delete(s.members, name)
	}
	return nil
}

// Start starts the loop that calls [Sharer.Sync] at once and then every
// period ([WithPeriod]), for the breakers whose round is due, until
// [Sharer.Close]; each round returns within the timeout ([WithTimeout]).
// Calls through the breakers never wait for it. It returns an error if the
// loop was started before, and one wrapping [ErrClosed] after Close.
func (s *Sharer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return closedErr("Start")
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
	// Close stops the loop between rounds, never within one: a round cut
	// short would be taken for a Redis that did not answer, and logged as
	// unreachable. Each round is bounded by the timeout all the same.
	round := context.WithoutCancel(ctx)
	for {
		_ = s.sync(round, false) // logged by sync
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Close stops the loop, waits for it to return (the round in progress, if
// any, ends as every round does, within the timeout, and is logged as
// every round is), and leaves every shared breaker deciding on its own
// history. Commands to Redis that a round or
// an override gave up waiting on end when go-redis gives up on them (its
// ReadTimeout) or when the client is closed: Close waits for them up to
// the timeout ([WithTimeout]). It does not close the Redis client. A
// second Close returns an error wrapping [ErrClosed], as every other
// method does after Close.
func (s *Sharer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return closedErr("Close")
	}
	s.closed = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	waited := make(chan struct{})
	go func() { s.pending.Wait(); close(waited) }()
	timer := time.NewTimer(s.o.timeout) // go-redis's own time, not the sharer's clock
	select {
	case <-waited:
	case <-timer.C:
	}
	timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.members {
		m.fleet.ClearOthers()
	}
	return nil
}

// Sync runs one round for every shared breaker, as the loop does for
// each breaker whose round is due (see [Sharer.Status]): for each breaker,
// it adds what the breaker counted since its last round to the fleet's
// counters on the grid of buckets (see the package documentation), reads
// the fleet's counters back, and feeds the other processes' part of them
// to the breaker ([fleet.Member.SetOthers]). On a single node, that is one
// pipelined round trip; on a Redis Cluster, one to each shard (the master
// of the breakers' slots), all at once.
//
// Sync returns by the timeout ([WithTimeout], from the call) or ctx's
// deadline, whichever comes first, and then some microseconds to take
// in what came back: it waits for another round in progress, and for
// Redis, no longer than that, whatever go-redis's own timeouts. Commands
// still unanswered then are left to go-redis, which ends them by its own
// timeouts; a shard waited on so is skipped by the rounds until they end.
//
// A shard that does not answer in time, or refuses the commands (a Redis
// down, slow, or a cluster's master dead or moved): its breakers decide
// on their own histories, Sync logs it once per shard until the shard
// answers again, which it logs too, and returns an error wrapping
// [ErrUnreachable] that names the shard (on a cluster) and its breakers'
// keys; the other shards' breakers go on sharing in the same round. On a
// cluster, the sharer then has the client reload the cluster's slots, so
// that the next rounds find a promoted replica. A breaker whose keys hold
// what the sharer cannot use decides on its own history, is logged once,
// and Sync returns an error wrapping [ErrBadData] for it. What a breaker
// counted is added to the fleet's counters once: a round that gave up
// after its commands were sent adds nothing again (they may have run); one
// whose commands were not sent, or were refused, adds it next round. After
// Close, Sync returns an error wrapping [ErrClosed].
func (s *Sharer) Sync(ctx context.Context) error { return s.sync(ctx, true) }

// shard is the part of a round that goes to one node of Redis.
type shard struct {
	addr   string          // the node's address on a cluster; "" for the client as a whole
	client redis.Cmdable   // what the round's commands go through
	batch  bool            // one MGET for every breaker
	plans  []*gridPlan     // the breakers of the shard
	err    error           // why the commands were not sent: the shard busy, or unknown
	ctx    context.Context // bounds the shard's part of the round
	done   chan struct{}   // closed once go-redis has answered
	late   bool            // the round gave up waiting: the commands may have run
}

// errBusy is the error of a shard whose exchange of a round before is
// still running in go-redis.
var errBusy = errors.New("the shard's round before is still waiting on Redis")

// sync runs a round for every breaker, or, with all false, for those
// whose round is due; it returns by the timeout from now or ctx's
// deadline.
func (s *Sharer) sync(ctx context.Context, all bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.timeout)
	defer cancel()
	select {
	case s.round <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("%w: the round before has not ended: %w", ErrUnreachable, ctx.Err())
	}
	defer func() { <-s.round }()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return closedErr("Sync")
	}
	members := make([]*member, 0, len(s.members))
	for _, m := range s.members {
		members = append(members, m)
	}
	s.mu.Unlock()
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
	slices.SortFunc(members, func(a, b *member) int { return strings.Compare(a.grid.base, b.grid.base) })
	plans := make([]*gridPlan, len(members))
	for i, m := range members {
		plans[i] = planGrid(m)
	}
	shards := s.shards(ctx, plans)
	if err := s.send(ctx, shards); err != nil {
		return err
	}
	var errs []error
	reload := false
	seen := make(map[string]bool, len(shards))
	for _, sh := range shards {
		seen[sh.addr] = true
		lost, err := s.settleShard(sh, now)
		if err != nil {
			errs = append(errs, err)
		}
		reload = reload || lost
	}
	for addr := range s.down {
		if !seen[addr] {
			delete(s.down, addr) // its breakers moved: they log their recovery where they went
		}
	}
	for addr := range s.refused {
		if !seen[addr] {
			delete(s.refused, addr)
		}
	}
	if c, ok := s.client.(*redis.ClusterClient); ok && reload {
		// A shard failed or redirected: a replica may have taken over, or a
		// slot moved, which go-redis learns by itself only from a redirection
		// of its own commands or after ten seconds. This reloads in the
		// background, at most once every 200 ms.
		c.ReloadState(ctx)
	}
	return errors.Join(errs...)
}

// shards groups the plans by the node of Redis they go to: on a cluster,
// the master of each breaker's slot, as the client knows it; otherwise
// the client as a whole.
func (s *Sharer) shards(ctx context.Context, plans []*gridPlan) []*shard {
	c, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return []*shard{{client: s.client, batch: s.batch, plans: plans}}
	}
	by := make(map[string]*shard)
	var out []*shard
	for _, p := range plans {
		node, err := c.MasterForKey(ctx, p.keys[0])
		addr := ""
		if err == nil {
			addr = node.Options().Addr
		}
		sh := by[addr]
		if sh == nil {
			sh = &shard{addr: addr, err: err}
			if node != nil && err == nil {
				sh.client = node
			}
			by[addr] = sh
			out = append(out, sh)
		}
		sh.plans = append(sh.plans, p)
	}
	return out
}

// send sends each shard's commands at once, each pipelined in a goroutine
// of its own, and waits for them until ctx ends. It returns an error
// wrapping [ErrClosed] if the sharer was closed.
func (s *Sharer) send(ctx context.Context, shards []*shard) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return closedErr("Sync")
	}
	for _, sh := range shards {
		if sh.err != nil {
			continue
		}
		if s.busy[sh.addr] {
			sh.err = errBusy
			continue
		}
		s.busy[sh.addr] = true
		s.pending.Add(1)
		sh.ctx = ctx
		if s.refused[sh.addr] {
			// It refused the connection last round (a dead node): a live one
			// answers within half a period, and go-redis's retries of the dial
			// would hold the round up to its timeout.
			var cancel context.CancelFunc
			sh.ctx, cancel = context.WithTimeout(ctx, s.o.period/2)
			defer cancel()
		}
		ctx := sh.ctx
		pipe := sh.client.Pipeline()
		for _, p := range sh.plans {
			p.queue(ctx, pipe, keyTTL(p.m.fleet.Window(), p.horizon), sh.batch)
		}
		if sh.batch {
			var keys []string
			for _, p := range sh.plans {
				p.readAt = len(keys)
				keys = append(keys, p.keys...)
			}
			read := pipe.MGet(ctx, keys...)
			for _, p := range sh.plans {
				p.read = read
			}
		}
		sh.done = make(chan struct{})
		go func() {
			defer s.pending.Done()
			cmds, err := pipe.Exec(ctx)
			failUnanswered(cmds, err)
			s.mu.Lock()
			delete(s.busy, sh.addr)
			s.mu.Unlock()
			close(sh.done)
		}()
	}
	s.mu.Unlock()
	for _, sh := range shards {
		if sh.done == nil {
			continue
		}
		select {
		case <-sh.done:
			continue
		default:
		}
		select {
		case <-sh.done:
		case <-sh.ctx.Done():
			select {
			case <-sh.done: // answered as the time ran out
			default:
				sh.late = true
			}
		}
	}
	return nil
}

// settleShard takes in what a shard answered, breaker by breaker. It
// returns whether the shard (or one of its breakers' slots) could not be
// reached, and the shard's errors.
func (s *Sharer) settleShard(sh *shard, now time.Time) (bool, error) {
	var unreached error
	switch {
	case sh.err != nil:
		unreached = sh.err
	case sh.late:
		unreached = context.DeadlineExceeded
	}
	var errs []error
	var lostKeys []string
	recovered := 0
	delete(s.refused, sh.addr)
	for _, p := range sh.plans {
		m := p.m
		err := unreached
		switch {
		case sh.err != nil:
			// Nothing sent: added next round.
		case sh.late:
			p.countAdds(false)
		default:
			p.countAdds(true)
			if e := p.err(); unreachable(e) {
				err = e
			}
		}
		if err != nil {
			if neverSent(err) && !refused(err) {
				s.refused[sh.addr] = true
			}
			m.fleet.ClearOthers()
			m.lost = true
			lostKeys = append(lostKeys, m.grid.base)
			if unreached == nil {
				unreached = err
			}
			continue
		}
		if m.lost {
			m.lost = false
			recovered++
		}
		if err := s.take(m, p, now); err != nil {
			errs = append(errs, err)
		}
	}
	where := "Redis"
	if s.cluster {
		where = "Redis Cluster shard " + sh.addr
		if sh.addr == "" {
			where = "Redis Cluster" // its slots could not be read
		}
	}
	if len(lostKeys) > 0 {
		if !s.down[sh.addr] {
			s.down[sh.addr] = true
			s.o.logger.Warn("redisbreaker: "+where+" unreachable; its breakers decide on their own histories until it is back",
				"prefix", s.o.prefix, "shard", sh.addr, "breakers", len(lostKeys), "err", unreached)
		}
		errs = append(errs, fmt.Errorf("%w: %s, %s: %w", ErrUnreachable, where, keyList(lostKeys), unreached))
		return true, errors.Join(errs...)
	}
	if s.down[sh.addr] || recovered > 0 {
		delete(s.down, sh.addr)
		s.o.logger.Info("redisbreaker: "+where+" reachable again; its breakers decide on the fleet's histories",
			"prefix", s.o.prefix, "shard", sh.addr, "breakers", len(sh.plans))
	}
	return false, errors.Join(errs...)
}

// call runs fn, a command to Redis, in a goroutine of its own, and waits
// for it no longer than the timeout or ctx's deadline, whichever comes
// first. It returns an error wrapping [ErrClosed], naming method, after
// Close, and one wrapping [ErrUnreachable] when fn fails or is late.
func (s *Sharer) call(ctx context.Context, method string, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.timeout)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return closedErr(method)
	}
	s.pending.Add(1)
	s.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		defer s.pending.Done()
		defer cancel()
		done <- fn(ctx)
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		default:
			err = ctx.Err()
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, method, err)
	}
	return nil
}

// keyList names the keys of breakers in an error, at most ten of them.
func keyList(bases []string) string {
	const most = 10
	var b strings.Builder
	b.WriteString("keys ")
	for i, k := range bases {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(bases)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.300q", k)
	}
	return b.String()
}

// take settles m's part of a round and feeds m the others' history.
func (s *Sharer) take(m *member, p *gridPlan, now time.Time) error {
	others, err := p.settle(now, s.o.period)
	m.grid.next = now.Add(m.grid.period)
	m.status.Store(&Status{Processes: m.grid.processes, Period: m.grid.period, Synced: m.grid.synced})
	if err == nil {
		err = s.takeOverride(m, p.override, now)
	}
	if err == nil {
		err = m.fleet.SetOthers(others)
	}
	if err != nil {
		m.fleet.ClearOthers()
		if !m.bad {
			m.bad = true
			s.o.logger.Warn("redisbreaker: unusable data in Redis; left out of the fleet's",
				"key", m.grid.base, "err", err)
		}
		return fmt.Errorf("%w: key %.300q: %w", ErrBadData, m.grid.base, err)
	}
	if m.bad {
		m.bad = false
		s.o.logger.Info("redisbreaker: data in Redis usable again", "key", m.grid.base)
	}
	return nil
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

// refusals are the error replies of a node that did not run a command
// because the command is not its to run, or not now: the slot is another
// node's, the cluster has no master for it, the node is loading its data
// or a replica.
var refusals = []string{"MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN ", "LOADING ", "READONLY ", "MASTERDOWN "}

// refused reports whether err is one of the refusals.
func refused(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	for _, r := range refusals {
		if strings.HasPrefix(msg, r) {
			return true
		}
	}
	return false
}

// unreachable reports whether err says that the breaker's shard could not
// be used: no answer, or a refusal; not an answer the sharer cannot use.
func unreachable(err error) bool {
	return err != nil && (!isReply(err) || refused(err)) && !errors.Is(err, errUnusable)
}

// keyTTL is how long a block's key lives: the blocks a breaker reads
// back (horizon), the two newest, and one more.
func keyTTL(window time.Duration, horizon int64) time.Duration {
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
	// one second (see the package documentation, "A large fleet").
	Period time.Duration
	// Synced is when the sharer last read the fleet's counters for the
	// breaker: the breaker's view of its fleet is as old as that. Zero
	// before the first round that did.
	Synced time.Time
}

// Status returns what the sharer learnt of the fleet of the breaker shared
// under name in its last round that reached Redis: the zero Status before
// any did. It returns an error wrapping [ErrNotShared] for a name not
// shared, and one wrapping [ErrClosed] after Close.
func (s *Sharer) Status(name string) (Status, error) {
	s.mu.Lock()
	m, ok := s.members[name]
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return Status{}, closedErr("Status")
	case !ok:
		return Status{}, fmt.Errorf("%w: %.300q", ErrNotShared, name)
	}
	if p := m.status.Load(); p != nil {
		return *p, nil
	}
	return Status{}, nil
}
