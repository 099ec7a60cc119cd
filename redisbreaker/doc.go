// Package redisbreaker shares the bucket histories of breakers across the
// processes of a fleet through Redis, so that each process's breaker
// decides on the fleet's evidence as well as its own.
//
// Fifty instances that each call a dependency twice a second together see
// a hundred calls a second, but each sees two: too few for its breaker to
// shed an outage well, even reaching back past its window (in the
// simulator, 37 % of an outage gets through each, against 3 to 5 %
// shared; see docs/design/behaviour.md). Shared, every instance's breaker judges
// two histories with the one judge a lone breaker uses, every refinement
// included: its own, and the fleet's, its own buckets and the other
// processes' added up bucket by bucket (package fleet); it drops with the
// higher of the two probabilities. An instance whose calls fail while the
// rest of the fleet's succeed still sheds on its own evidence; a healthy
// fleet never makes a healthy instance drop anything.
//
// # Use
//
// Make a [Sharer] on a go-redis client (single node, Sentinel or Cluster:
// any redis.UniversalClient), share the breakers, start its loop, and close
// it before the client:
//
//	sharer, err := redisbreaker.New(rdb, redisbreaker.WithPrefix("checkout:"))
//	...
//	_ = sharer.Share(registry.Get("payments"))
//	_ = sharer.Start()
//	defer sharer.Close()
//
// Breakers are shared under their names: the breakers named "payments" of
// every process with the same prefix share their counts.
//
// Give it a client that does not retry (redis.Options.MaxRetries −1):
// go-redis sends a pipeline again after a timeout, and what a round added
// would count twice.
//
// # What it does
//
// Calls never wait on Redis: [breaker.Breaker.Allow] reads the judgement
// of the fleet's history made when it was last fed to the breaker (and
// when a bucket finishes), without a lock or an allocation. The loop that
// [Sharer.Start] runs makes, every period ([WithPeriod], one bucket of a
// default breaker, 100 ms), one pipelined round trip for the shared
// breakers whose round is due: for each, it adds what the breaker counted
// since its last round to the fleet's counters in Redis, and reads the
// fleet's counters back; the other processes' part of them (the counters
// less what this process added) is the history the breaker then decides
// on ([fleet.Member.SetOthers]).
//
// # The layout: counters on the grid
//
// Every process numbers its buckets on one grid (package fleet): bucket g
// spans [g·span, (g+1)·span) from the Unix epoch, and block k holds the
// window's worth of buckets k·size to k·size+size−1. Each block of a
// breaker is one Redis string, at
//
//	<prefix>{<name>}:4:<k>
//
// holding, for each of its buckets, three unsigned 32-bit big-endian
// counters (successes, failures, drops), then one counting the processes
// that wrote to it (the 4 is the layout's version: a layout to come would
// use keys of its own). A round adds to them with BITFIELD ... OVERFLOW SAT
// INCRBY (only the counters that changed, and the process's own count once
// a block) and reads the newest block and the one before with MGET, one
// MGET for every breaker on a single node; the block before is read no
// more once no process adds to it, and older blocks (those read back for
// on light traffic) are read once each. No script runs, and nothing in a
// round grows with the fleet: a round costs Redis a counter or three and a
// string of a few hundred bytes per breaker, whatever the number of
// processes. A process that stops, or loses Redis, leaves nothing to clean
// up: its counts leave the others' windows with the grid, and each block
// expires on its own (35 windows after it stops being the newest: its
// first two processes set its TTL then, off the busiest key).
// What a round added is added once: a round that failed after its
// commands were sent is not sent again (they may have run), one that could
// not connect is; a process that finds the counters gone (Redis restarted
// without persistence, or a replica promoted before it had them) adds its
// window again.
//
// The name in braces is a hash tag: on a Redis Cluster, a breaker's keys
// share a slot (one MGET reads them) and the breakers spread over the
// shards. A round talks to each shard (the master of its breakers' slots,
// as the client's slot map has it) on its own, all at once: see "When a
// shard of a Redis Cluster dies".
//
// # A large fleet
//
// Each round of each process touches the newest block of each breaker it
// shares: a fleet of N processes at a period P makes about 2·N/P
// operations a second on that key. The sharer reads from the newest
// blocks how many processes share a breaker, and lengthens that breaker's
// period to keep the fleet's rounds to 10,000 a second: the period is
// max(WithPeriod, N / 10,000 s), at most one second. Up to 1,000
// processes nothing changes; 5,000 processes round every 500 ms, 10,000 or
// more every second, so that a process's view of its fleet is never older
// than a second and a round trip, and holds each other process's counts
// as of its last round, up to a period before. [Sharer.Status] tells a
// breaker's fleet size, period and last round.
//
// # Overrides
//
// [Sharer.SetOverride] sets an operator's override ([override.Spec]) on
// a breaker of every process of the fleet: it writes it, with its TTL, at
// <prefix>{<name>}:override, and every sharer reads that key with the
// breaker's blocks, so each process's breaker obeys in its next round,
// within one period, for what is left of the TTL counted from when it was
// set. [Sharer.ClearOverride] deletes it, and each sharer clears what it
// set from the fleet (not an override set on its breaker by other means
// since). Redis drops the key when its TTL ends; each breaker ends the
// override on its own then too.
//
// # When Redis fails
//
// Redis down, slow (beyond [WithTimeout]) or answering what the sharer
// cannot use: the breakers decide on their own histories, as unshared
// ones do; the sharer logs it once through log/slog ([WithLogger]), and once
// again when Redis is back, which it finds by itself on a later round. A
// breaker's fleet history also expires on its own one window after it
// was last fed, should the loop stall. Nothing panics, and nothing blocks
// a call. One round is in flight at a time, and it returns by the timeout
// whatever go-redis's own: a Redis slower than the period makes the rounds
// late, not more numerous, and every process's counts still land.
// (go-redis reports its own failures to connect through its own logger,
// which redis.SetLogger replaces.)
//
// Counters that no fleet could have written are refused, not shed on: a
// block longer than a window's, or a bucket holding more calls than the
// processes its blocks count could have made at one a nanosecond each (a
// corrupt write, another program on the same keys). The breaker then
// decides on its own history, and [Sharer.Sync] returns an error wrapping
// [ErrBadData]. An override is held no longer than the TTL it was set
// with, whatever time it says it was set.
//
// # When a shard of a Redis Cluster dies
//
// A master killed: the breakers whose slots it served decide on their own
// histories from their next round, logged once for the shard ("Redis
// Cluster shard <address> unreachable", with how many breakers), and
// [Sharer.Sync] returns an error wrapping [ErrUnreachable] that names the
// shard and their keys. The other shards' breakers go on sharing in the
// same rounds, every period: a dead master's host refuses connections at
// once, and the sharer gives a shard that refused half a period per
// round, so that go-redis's retries of the dial do not hold the rounds up
// (a master that stops answering without refusing holds each round up to
// the timeout). The sharer has the client reload the slot map after each
// failed round (go-redis reloads at most once every 200 ms). Once a replica has taken over, the next rounds find it, and the
// breakers share again through it ("reachable again", logged once): in the
// tests, 0.2 to 0.3 s after the replica answers, with a client that does
// not retry (redis.ClusterOptions.MaxRetries −1, and
// redis.Options.DialerRetries 1 through ClusterOptions.NewClient); with
// go-redis's defaults, 0.06 to 1.2 s. Counts a process added to the dead
// master that its replica had not received are lost; a process that finds
// its counts gone adds its window again.
//
// # Load on Redis
//
// Measured with the load probe (make fleet-load; docs/guide/fleet.md has the
// figures and the machine): a round costs Redis's commands about 1 to 3
// µs per breaker (a BITFIELD and a share of one MGET), whatever the
// fleet's size. At
// the default period that is 10 to 31 µs of the commands' time a second
// per process and breaker, and 40 to 140 µs of Redis's whole CPU with the
// network's share (a round trip costs Redis about 14 µs whatever it
// carries, shared by the breakers a process shares); a longer period
// ([WithPeriod]) divides all of it. Memory: a block of 244 bytes per
// breaker and window, for 35 windows, and the override's key while one is
// set.
//
// # Tests
//
// The tests start a real redis-server (Debian's package, which make test
// installs) on a free port of 127.0.0.1, without persistence, and kill it
// and start it again mid-run.
//
// A Sharer is safe for concurrent use by multiple goroutines.
package redisbreaker
