package redisbreaker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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
	loaded bool       // the last round ran the script: Redis has it
}

// member is a shared breaker.
type member struct {
	b     breaker.Breaker
	fleet *fleet.Member
	key   string

	own fleet.History // guarded by Sharer.round; what the round published

	bad bool // guarded by Sharer.round; the last read was unusable, and that was logged
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
	return &Sharer{client: client, o: o, members: make(map[string]*member)}, nil
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
	s.members[name] = &member{b: b, fleet: link, key: s.o.prefix + name}
	return nil
}

// Unshare stops sharing the breaker shared under name, which decides on
// its own history again; its fields in Redis expire on their own. It does
// nothing for a name not shared.
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
		_ = s.Sync(rctx) // logged by Sync
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

// Sync runs one round, as the loop does every period: in one pipelined
// round trip, for each shared breaker, a script in Redis publishes the
// breaker's history ([fleet.Member.History]) under this process's ID,
// renews the expiry of its key, deletes the histories of processes that
// stopped publishing, and returns the others' published within the
// breaker's window ([fleet.Member.Window]); the sharer merges them and the
// breaker decides on them ([fleet.Member.SetOthers]). Histories older than
// that are stale, and left out.
//
// When the round trip fails as a whole (Redis down, slow, or refusing),
// every breaker decides on its own history, Sync logs it once until a
// round succeeds again, which it logs too, and returns an error wrapping
// [ErrUnreachable]. A breaker whose key holds what the sharer cannot use
// (a key of another type) decides on its own history, is logged once, and
// Sync returns an error wrapping [ErrBadData] for it; so it does for
// values of other processes that cannot be parsed, or whose buckets do
// not add up to the breaker's (another window), which are left out of the
// fleet's while the rest still count.
func (s *Sharer) Sync(ctx context.Context) error {
	s.round.Lock()
	defer s.round.Unlock()
	s.mu.Lock()
	members := make([]*member, 0, len(s.members))
	for _, m := range s.members {
		members = append(members, m)
	}
	closed := s.closed
	s.mu.Unlock()
	if len(members) == 0 || closed {
		return nil
	}
	slices.SortFunc(members, func(a, b *member) int { return strings.Compare(a.key, b.key) })

	now := s.o.clock.Now()
	results, err := s.exchange(ctx, members, now, s.loaded)
	if err != nil && s.loaded && anyNoScript(results) {
		// The script is gone (Redis restarted or flushed its scripts, or a
		// node of a cluster has not seen it): send it whole, once more.
		results, err = s.exchange(ctx, members, now, false)
	}
	if err != nil && (!isReply(err) || allFailed(results)) {
		s.loaded = false
		for _, m := range members {
			m.fleet.ClearOthers()
		}
		if !s.down {
			s.down = true
			s.o.logger.Warn("redisbreaker: Redis unreachable; breakers decide on their own histories until it is back",
				"prefix", s.o.prefix, "err", err)
		}
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if s.down {
		s.down = false
		s.o.logger.Info("redisbreaker: Redis reachable again; breakers decide on the fleet's histories", "prefix", s.o.prefix)
	}
	s.loaded = true
	var errs []error
	for i, m := range members {
		if err := s.take(m, results[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// exchange runs the script for each member in one pipeline: by its SHA1
// once Redis has it (loaded), whole otherwise. The error is the pipeline's:
// that of its first failed command. It keeps what each member published
// in member.own, which reading the others' takes the grid from.
func (s *Sharer) exchange(ctx context.Context, members []*member, now time.Time, loaded bool) ([]*redis.Cmd, error) {
	results := make([]*redis.Cmd, len(members))
	pipe := s.client.Pipeline()
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
	_, err := pipe.Exec(ctx)
	return results, err
}

// isReply reports whether err is an error reply of Redis to a command
// (WRONGTYPE, say), rather than a failure to reach it.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

// allFailed reports whether every command of a round failed.
func allFailed(results []*redis.Cmd) bool {
	for _, r := range results {
		if r.Err() == nil {
			return false
		}
	}
	return true
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

// take feeds m the others' history the script returned.
func (s *Sharer) take(m *member, result *redis.Cmd) error {
	others, swept, err := parseResult(m, result)
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
			s.o.logger.Warn("redisbreaker: unusable histories in Redis; left out of the fleet's",
				"key", m.key, "err", err)
		}
		return fmt.Errorf("%w: key %.300q: %w", ErrBadData, m.key, err)
	case m.bad && swept: // only a sweep reads every process's history
		m.bad = false
		s.o.logger.Info("redisbreaker: histories in Redis usable again", "key", m.key)
	}
	return nil
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

// keyTTL is how long a breaker's key lives without a write: two windows
// and a period, well after the histories in it went stale (one window).
func keyTTL(window, period time.Duration) time.Duration {
	return 2*window + period
}
