package redisbreaker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/fleet"
)

// gridState is what a shared breaker keeps of the grid (layout v4);
// guarded by Sharer.round.
type gridState struct {
	base string // prefix + "{" + name + "}"

	sent     map[int64]fleet.Bucket // per bucket of the two newest blocks, what this process added
	ownBlock map[int64]fleet.Bucket // per block, what this process added
	joined   int64                  // the newest block this process counted itself in
	expire   []expiry               // blocks whose TTL this process sets once they are no longer the newest
	blocks   map[int64]fleet.Bucket // older blocks read, this process's part taken out

	applied   *fleetOverride // the fleet's override this sharer set on the breaker, nil for none
	appliedAt time.Time      // when the breaker took it (its ActiveOverride.SetAt)

	before   block // the block before the newest, once no process adds to it any more
	beforeAt int64 // its number; minBlock for none

	processes int64         // the fleet's processes, as the newest blocks count them
	period    time.Duration // between two rounds of this breaker
	next      time.Time     // when this breaker's next round is due
	synced    time.Time     // the last round that read the fleet's counters
}

func newGridState(prefix, name string) gridState {
	return gridState{base: keyBase(prefix, name), sent: make(map[int64]fleet.Bucket),
		ownBlock: make(map[int64]fleet.Bucket), blocks: make(map[int64]fleet.Bucket), joined: minBlock, beforeAt: minBlock}
}

// expiry is a block whose TTL a process is to set.
type expiry struct {
	block int64
	key   string
}

// minBlock stands for "no block yet".
const minBlock = -1 << 62

// gridPlan is one breaker's part of a round: what it adds, what it
// reads.
type gridPlan struct {
	m       *member
	h       fleet.History // the breaker's history, as published
	size    int
	newest  int64 // the newest block: that of the breaker's live bucket
	horizon int64 // blocks read back beyond the two newest

	adds    []gridAdd
	expires []*redis.BoolCmd
	expired []expiry // the blocks of expires
	keys    []string // read: the newest block, the fleet's override, the block before (unless known), then older ones
	before  bool     // keys[2] is the block before the newest
	olds    []int64  // the blocks of the keys after those
	read    *redis.SliceCmd
	readAt  int // where keys start in read's reply

	override any // the fleet's override as read: nil, or its value
}

// gridAdd is one BITFIELD of a round: the deltas it adds to a block.
type gridAdd struct {
	block  int64
	key    string
	deltas map[int64]fleet.Bucket
	join   bool
	cmd    *redis.Cmd
}

// planGrid returns m's part of a round.
func planGrid(m *member) *gridPlan {
	g := &m.grid
	h := m.fleet.History()
	p := &gridPlan{m: m, h: h, size: h.Size, newest: floorDiv(h.Newest, int64(h.Size))}
	p.horizon = int64(max(minHorizon, len(h.Blocks)))
	size := int64(h.Size)
	first := h.Newest - int64(len(h.Buckets)) + 1
	byBlock := make(map[int64]map[int64]fleet.Bucket)
	for i, b := range h.Buckets {
		n := first + int64(i)
		d := diff(b, g.sent[n])
		if d == (fleet.Bucket{}) {
			continue
		}
		k := floorDiv(n, size)
		if byBlock[k] == nil {
			byBlock[k] = make(map[int64]fleet.Bucket)
		}
		byBlock[k][n] = d
	}
	join := g.joined != p.newest
	if join && byBlock[p.newest] == nil {
		byBlock[p.newest] = map[int64]fleet.Bucket{}
	}
	for k, deltas := range byBlock {
		p.adds = append(p.adds, gridAdd{block: k, key: blockKey(g.base, k), deltas: deltas, join: join && k == p.newest})
	}
	p.keys = []string{blockKey(g.base, p.newest), overrideKey(g.base)}
	if g.beforeAt != p.newest-1 {
		p.keys, p.before = append(p.keys, blockKey(g.base, p.newest-1)), true
	}
	for k := p.newest - 2; k >= p.newest-1-p.horizon && len(p.olds) < maxBlockReads; k-- {
		if _, ok := g.blocks[k]; !ok {
			p.keys = append(p.keys, blockKey(g.base, k))
			p.olds = append(p.olds, k)
		}
	}
	return p
}

// queue adds the plan's writes to pipe; its reads go in a MGET of their
// own unless batch is true, when the caller reads them with others'.
func (p *gridPlan) queue(ctx context.Context, pipe redis.Pipeliner, ttl time.Duration, batch bool) {
	g := &p.m.grid
	for _, e := range g.expire {
		if e.block < p.newest { // off the newest block, the busiest key
			p.expires = append(p.expires, pipe.PExpire(ctx, e.key, ttl))
			p.expired = append(p.expired, e)
		}
	}
	for i := range p.adds {
		a := &p.adds[i]
		a.cmd = pipe.Do(ctx, bitfieldArgs(a.key, a.block, p.size, a.deltas, a.join)...)
	}
	if !batch {
		p.read = pipe.MGet(ctx, p.keys...)
	}
}

// err returns the first error of the plan's commands; nil if they all
// went through.
func (p *gridPlan) err() error {
	for _, a := range p.adds {
		if err := a.cmd.Err(); err != nil {
			return err
		}
	}
	return p.read.Err()
}

// countAdds counts what the plan's writes added: with answered false,
// all of them (the round gave up waiting: they may have run); otherwise
// those that were not refused or never sent.
func (p *gridPlan) countAdds(answered bool) {
	g := &p.m.grid
	size := int64(p.size)
	if answered {
		for i, c := range p.expires {
			if err := c.Err(); err == nil || (isReply(err) && !refused(err)) {
				g.expire = slices.DeleteFunc(g.expire, func(e expiry) bool { return e == p.expired[i] })
			}
		}
	}
	for _, a := range p.adds {
		var err error
		if answered {
			err = a.cmd.Err()
			if err != nil && neverSent(err) {
				continue // added again next round
			}
		}
		for n, d := range a.deltas {
			g.sent[n] = plus(g.sent[n], d)
			g.ownBlock[a.block] = plus(g.ownBlock[a.block], d)
			if a.block == g.beforeAt { // read no more: keep it as Redis holds it
				g.before = g.before.add(int(n-a.block*size), d)
			}
		}
		if a.join {
			g.joined = a.block
			if !answered || err != nil {
				continue
			}
			if vals, err := a.cmd.Slice(); err == nil && len(vals) > 0 {
				if joined, ok := vals[len(vals)-1].(int64); ok && joined <= 2 {
					// The block's first processes give it its TTL, in their first
					// round after it: two of them, should one stop before.
					g.expire = append(g.expire, expiry{a.block, a.key})
				}
			}
		}
	}
	// Forget what no longer counts: buckets before the two newest blocks,
	// blocks beyond the horizon.
	for n := range g.sent {
		if n < (p.newest-1)*size {
			delete(g.sent, n)
		}
	}
	for k := range g.ownBlock {
		if k < p.newest-2-p.horizon {
			delete(g.ownBlock, k)
		}
	}
	for k := range g.blocks {
		if k < p.newest-1-p.horizon {
			delete(g.blocks, k)
		}
	}
}

// settle takes in the reply of the plan's commands, once [gridPlan.countAdds]
// has counted what they added: the fleet's counters read give the others'
// history, which it returns.
func (p *gridPlan) settle(now time.Time, base time.Duration) (fleet.History, error) {
	blocks, err := p.blocks()
	if err != nil {
		return fleet.History{}, err
	}
	g := &p.m.grid
	newest, before := blocks[0], g.before
	olds := blocks[2:]
	if p.before {
		before, olds = blocks[2], blocks[3:]
	}
	processes := max(newest.counter(membersAt(p.size)), before.counter(membersAt(p.size)))
	// Refuse what no fleet of that many processes could have counted (the
	// block before, once read no more, was checked when it was read).
	for i, b := range blocks {
		if i == 1 {
			continue // the override
		}
		if err := b.check(p.size, processes, p.h.Span, p.keys[i]); err != nil {
			return fleet.History{}, err
		}
	}
	if p.before {
		// Once every process has had a round since the block ended (two of
		// the fleet's periods, and a bucket for calls found overdue when it
		// ended), nothing more is added to it: it is read no more. (A
		// process of the fleet with a longer WithPeriod than this one's
		// adds its last counts to it after: they are left out here.)
		settled := 2*max(g.period, base) + 2*p.h.Span
		if p.h.Newest-p.newest*int64(p.size) >= int64((settled+p.h.Span-1)/p.h.Span) {
			g.before, g.beforeAt = append(block(nil), before...), p.newest-1
		}
	}
	for i, k := range p.olds {
		g.blocks[k] = minus(olds[i].sum(p.size), g.ownBlock[k])
	}
	g.processes = processes
	g.period = periodFor(base, g.processes)
	g.synced = now
	others := p.others(newest, before)
	if p.lost(newest, before) {
		// Redis lost the counters (restarted without persistence, or a
		// replica promoted before it had them): add the window again.
		g.sent, g.ownBlock, g.joined = make(map[int64]fleet.Bucket), make(map[int64]fleet.Bucket), minBlock
		g.before, g.beforeAt = nil, minBlock
	}
	return others, nil
}

// blocks returns the blocks the plan read, in the order of its keys (the
// override's place left empty; it goes to p.override).
func (p *gridPlan) blocks() ([]block, error) {
	if err := p.err(); err != nil {
		return nil, err
	}
	vals, err := p.read.Result()
	if err != nil {
		return nil, err
	}
	if len(vals) < p.readAt+len(p.keys) {
		return nil, fmt.Errorf("%w: MGET returned %d values for %d keys", errUnusable, len(vals), p.readAt+len(p.keys))
	}
	vals = vals[p.readAt : p.readAt+len(p.keys)]
	p.override = vals[1]
	blocks := make([]block, len(vals))
	for i, v := range vals {
		if i == 1 {
			continue // the override
		}
		switch v := v.(type) {
		case nil:
		case string:
			switch {
			case len(v) > 4*(membersAt(p.size)+1):
				return nil, fmt.Errorf("%w: key %.300q holds %d bytes: more than a block of %d buckets",
					errUnusable, p.keys[i], len(v), p.size)
			case len(v)%4 != 0:
				return nil, fmt.Errorf("%w: key %.300q holds %d bytes: not a whole number of counters",
					errUnusable, p.keys[i], len(v))
			}
			blocks[i] = block(v)
		default:
			return nil, fmt.Errorf("%w: key %.300q: got %T, not a block", errUnusable, p.keys[i], v)
		}
	}
	return blocks, nil
}

// lost reports whether the counters read hold less than this process
// added: the block it counted itself in counts no process, or a bucket
// holds fewer calls than this process's own.
func (p *gridPlan) lost(newest, before block) bool {
	g := &p.m.grid
	if g.joined == p.newest && newest.counter(membersAt(p.size)) == 0 {
		return true
	}
	size := int64(p.size)
	for n, own := range g.sent {
		src, i := before, n-(p.newest-1)*size
		if i >= size {
			src, i = newest, i-size
		}
		if i < 0 || i >= size {
			continue
		}
		b := src.bucket(int(i))
		if b.Successes < own.Successes || b.Failures < own.Failures || b.Drops < own.Drops {
			return true
		}
	}
	return false
}

// others returns the other processes' history: the two newest blocks, and
// the older ones read before, less what this process added.
func (p *gridPlan) others(newest, before block) fleet.History {
	g := &p.m.grid
	size := int64(p.size)
	first := (p.newest - 1) * size
	buckets := make([]fleet.Bucket, 2*size)
	last := p.h.Newest
	for i := range buckets {
		src, j := before, i
		if int64(i) >= size {
			src, j = newest, i-int(size)
		}
		n := first + int64(i)
		buckets[i] = minus(src.bucket(j), g.sent[n])
		if buckets[i] != (fleet.Bucket{}) {
			last = max(last, n)
		}
	}
	o := fleet.History{Span: p.h.Span, Size: p.size, Newest: last, Buckets: buckets[:last-first+1]}
	lo := p.newest - 1 - p.horizon
	for k := lo; k <= p.newest-2; k++ {
		if b, ok := g.blocks[k]; ok && (b != fleet.Bucket{} || len(o.Blocks) > 0) {
			if len(o.Blocks) == 0 {
				o.Blocks = make([]fleet.Bucket, 0, p.newest-1-k)
			}
			o.Blocks = append(o.Blocks, b)
		} else if len(o.Blocks) > 0 {
			o.Blocks = append(o.Blocks, fleet.Bucket{})
		}
	}
	if len(o.Blocks) > 0 {
		o.NewestBlock = p.newest - 2
	}
	return o
}

// errUnusable is wrapped by the errors of settle for counters read that
// cannot be used.
var errUnusable = errors.New("unusable counters")

// diff returns a − b, count by count, negative where b is larger.
func diff(a, b fleet.Bucket) fleet.Bucket {
	return fleet.Bucket{Successes: a.Successes - b.Successes, Failures: a.Failures - b.Failures, Drops: a.Drops - b.Drops}
}

// neverSent reports whether err says that a command never ran: a
// connection that could not be made, or a node's refusal. After any other
// failure the command may have run, and what it added is not sent again.
func neverSent(err error) bool {
	var op *net.OpError
	return (errors.As(err, &op) && op.Op == "dial") || refused(err)
}
