package redisbreaker

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/srebreaker/srebreaker/fleet"
)

// Layout v4 keeps a breaker's fleet in counters on the grid of buckets
// that every process agrees on (package fleet): bucket g spans
// [g·span, (g+1)·span) from the Unix epoch, and block k holds the window's
// worth of buckets k·size to k·size+size−1. Each block is one Redis
// string, at blockKey, read and written with Redis's own commands, no
// script:
//
//	bytes 12·i to 12·i+11   bucket k·size+i: successes, failures, drops,
//	                        each an unsigned 32-bit big-endian counter
//	bytes 12·size to +3     how many processes wrote to the block
//
// A process adds what its breaker counted since its last round
// (BITFIELD … OVERFLOW SAT INCRBY u32 #j delta), and reads the two
// newest blocks back with GET (MGET). Counters saturate at 2^32−1 rather
// than wrap, and never go below 0. The fleet's sum is the blocks as they
// stand; a process takes its own part out (what it added, which it
// remembers), so a round costs Redis a few counters and two small strings
// whatever the fleet's size. A process that stops, or loses Redis, leaves
// nothing to delete: its counts age out of the window with the grid.
//
// Every key of a breaker holds its name as a hash tag, "{name}", so that
// a Redis Cluster keeps a breaker's keys on one slot (one MGET reads them)
// and spreads breakers over its shards.

// gridVersion names the layout in its keys.
const gridVersion = "4"

// maxFleetRate bounds the rounds a second that a fleet's processes make on
// one breaker: each round writes and reads the breaker's newest block, so
// a block's key sees about twice that in operations a second. The period
// of a breaker lengthens with its fleet to keep to it (periodFor).
const maxFleetRate = 10_000

// maxFleetPeriod bounds the period that a fleet's size lengthens: a
// process's view of its fleet is never older than this (and a round trip).
const maxFleetPeriod = time.Second

// maxBlockReads bounds the older blocks a breaker reads in one round, when
// it starts, so that a fleet started at once does not read thousands of
// keys in its first round.
const maxBlockReads = 8

// minHorizon is how many blocks back a breaker's keys live and are read
// at least: those of a default breaker's reading back on light traffic
// (30 windows), and a little more.
const minHorizon = 32

// blockKey returns the key of block k of the breaker whose keys start
// with base (prefix + "{" + name + "}").
func blockKey(base string, k int64) string {
	return base + ":" + gridVersion + ":" + strconv.FormatInt(k, 10)
}

// keyBase returns what every v4 key of a breaker starts with.
func keyBase(prefix, name string) string { return prefix + "{" + name + "}" }

// membersAt is the index of a block's counter of processes.
func membersAt(size int) int { return 3 * size }

// floorDiv is a/n rounded down.
func floorDiv(a, n int64) int64 {
	q := a / n
	if a%n != 0 && a < 0 {
		q--
	}
	return q
}

// block is a block's counters as read from Redis.
type block []byte

// counter returns counter j of b; a counter beyond the string is 0, as
// Redis reads it.
func (b block) counter(j int) int64 {
	if 4*j+4 > len(b) {
		return 0
	}
	return int64(binary.BigEndian.Uint32(b[4*j:]))
}

// bucket returns bucket i of the block.
func (b block) bucket(i int) fleet.Bucket {
	return fleet.Bucket{Successes: b.counter(3 * i), Failures: b.counter(3*i + 1), Drops: b.counter(3*i + 2)}
}

// add returns b with d added to its bucket i, as Redis adds it: each
// counter kept from 0 to 2^32−1.
func (b block) add(i int, d fleet.Bucket) block {
	if n := 4 * (3*i + 3); len(b) < n {
		b = append(b, make([]byte, n-len(b))...)
	}
	for j, v := range []int64{d.Successes, d.Failures, d.Drops} {
		x := min(max(b.counter(3*i+j)+v, 0), 1<<32-1)
		binary.BigEndian.PutUint32(b[4*(3*i+j):], uint32(x))
	}
	return b
}

// maxProcessRate bounds the calls a second that one process's breaker
// can count: one a nanosecond, some ten times what a core spends on a call
// through a breaker. A bucket read from Redis that holds more calls than
// the fleet's processes could have counted so, at that rate, was not
// written by the fleet (a corrupt write, another program on the same
// keys): the sharer refuses the breaker's counters for the round rather
// than shed on them.
const maxProcessRate = 1e9

// check returns an error wrapping errUnusable, naming key, if a bucket of
// b (a block of size buckets of span) holds more calls than processes
// processes, or those b counts if more, could have counted
// (maxProcessRate).
func (b block) check(size int, processes int64, span time.Duration, key string) error {
	n := max(processes, b.counter(membersAt(size)), 1)
	limit := float64(n) * maxProcessRate * span.Seconds()
	for i := range size {
		c := b.bucket(i)
		if calls := float64(c.Successes) + float64(c.Failures) + float64(c.Drops); calls > limit {
			return fmt.Errorf("%w: key %.300q: bucket %d holds %.0f calls, more than %d processes count in %v",
				errUnusable, key, i, calls, n, span)
		}
	}
	return nil
}

// sum returns the block's buckets added up.
func (b block) sum(size int) fleet.Bucket {
	var s fleet.Bucket
	for i := range size {
		s = plus(s, b.bucket(i))
	}
	return s
}

// bitfieldArgs returns the command that adds the deltas to the counters
// of block k: deltas maps a bucket of the block to what to add; join adds
// 1 to the block's processes.
func bitfieldArgs(key string, k int64, size int, deltas map[int64]fleet.Bucket, join bool) []any {
	args := make([]any, 0, 4+8*3*len(deltas))
	args = append(args, "BITFIELD", key, "OVERFLOW", "SAT")
	add := func(j int, v int64) {
		if v != 0 {
			args = append(args, "INCRBY", "u32", "#"+strconv.Itoa(j), v)
		}
	}
	for g, d := range deltas {
		i := int(g - k*int64(size))
		add(3*i, d.Successes)
		add(3*i+1, d.Failures)
		add(3*i+2, d.Drops)
	}
	if join {
		add(membersAt(size), 1)
	}
	return args
}

// periodFor returns the period of a breaker shared by a fleet of n
// processes (as its newest full block counted them), for a sharer whose
// period is base: base, lengthened so that the fleet makes at most
// maxFleetRate rounds a second on the breaker, up to maxFleetPeriod (never
// shorter than base).
func periodFor(base time.Duration, n int64) time.Duration {
	p := time.Duration(n) * time.Second / maxFleetRate
	return max(base, min(p, maxFleetPeriod))
}

// plus returns a + b, count by count.
func plus(a, b fleet.Bucket) fleet.Bucket {
	return fleet.Bucket{Successes: a.Successes + b.Successes, Failures: a.Failures + b.Failures, Drops: a.Drops + b.Drops}
}

// minus returns a − b, count by count, none below 0.
func minus(a, b fleet.Bucket) fleet.Bucket {
	return fleet.Bucket{Successes: max(a.Successes-b.Successes, 0), Failures: max(a.Failures-b.Failures, 0),
		Drops: max(a.Drops-b.Drops, 0)}
}
