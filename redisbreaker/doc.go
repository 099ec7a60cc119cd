// Package redisbreaker shares the counts of breakers across the processes
// of a fleet through Redis, so that each process's breaker decides on the
// fleet's evidence as well as its own.
//
// Fifty instances that each call a dependency twice a second together see
// a hundred calls a second, but each sees two: too few for its breaker to
// shed an outage well, even reaching back past its window (in the
// simulator, 37 % of an outage gets through each, against 5 % shared; see
// docs/behaviour.md). Shared, every instance's breaker drops calls with
// the higher of two probabilities: the formula's over its own window, and
// the formula's over the fleet's windows added up, to which protection and
// K apply as to one window ([breaker.Fleet]). An instance whose calls fail
// while the rest of the fleet's succeed still sheds on its own evidence;
// a healthy fleet never makes a healthy instance drop anything.
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
// # What it does
//
// Calls never wait on Redis: [breaker.Breaker.Allow] reads the fleet's
// counts last fed to the breaker, without a lock or an allocation. A call
// through a shared breaker costs about 1.4 times an unshared one's while
// neither the fleet nor the breaker sees failures, and about 3 times when
// they do (tens of nanoseconds: BenchmarkBreaker_AllowAcceptFleet against
// BenchmarkBreaker_AllowAccept in the breaker package, run alternately). The loop
// that [Sharer.Start] runs makes, every period ([WithPeriod], one bucket of
// a default breaker, 100 ms), one pipelined round trip for all shared
// breakers: for each, a script publishes this process's counts
// ([breaker.Fleet.Counts]) in the breaker's hash, under the process's ID,
// and returns the other processes' counts published within the breaker's
// window, added up, which the breaker then decides on
// ([breaker.Fleet.SetOthers]). Counts older than a window are stale: a
// process that stopped, or lost Redis, leaves the fleet's counts within a
// quarter window more, and its field is deleted. Each key expires on its
// own two windows and a period after the last process wrote it; no
// cleanup job is needed.
//
// # When Redis fails
//
// Redis down, slow (beyond [WithTimeout]) or answering what the sharer
// cannot use: the breakers decide on their own counts, as unshared ones
// do; the sharer logs it once through log/slog ([WithLogger]), and once
// again when Redis is back, which it finds by itself on a later round. A
// breaker's fleet counts also expire on their own one window after they
// were last fed, should the loop stall. Nothing panics, and nothing blocks
// a call. (go-redis reports its own failures to connect through its own
// logger, which redis.SetLogger replaces.)
//
// # Load on Redis
//
// For N processes sharing M breakers, with the default period of 100 ms:
//
//   - round trips: 10·N per second, one per process per period, each a
//     pipeline of M EVALSHA calls (10·N·M scripts a second);
//   - bytes: about 220 sent and 60 received per breaker per round,
//     whatever N (measured by BenchmarkSharer_Sync, which counts the bytes
//     on the client's connection: 219 and 59 to 65 for N from 10 to 200),
//     so about 2.8 kB/s per process per breaker, 2.8·N·M kB/s in all: 50
//     processes × 10 breakers is 1.4 MB/s;
//   - work: each script reads and writes a few fields of one hash, the
//     same whatever N; once a quarter window (twice a second by default)
//     one of them reads the whole hash, N fields, to drop stale counts.
//     Memory: one hash per breaker, of N fields of about 60 bytes.
//
// A longer period divides all of it: [WithPeriod] of 500 ms is a fifth,
// with fleet counts up to half a second old.
//
// # Tests
//
// The tests start a real redis-server (Debian's package, which make test
// installs) on a free port of 127.0.0.1, without persistence, and kill it
// and start it again mid-run.
//
// A Sharer is safe for concurrent use by multiple goroutines.
package redisbreaker
