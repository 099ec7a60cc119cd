// Package redisbreaker shares the bucket histories of breakers across the
// processes of a fleet through Redis, so that each process's breaker
// decides on the fleet's evidence as well as its own.
//
// Fifty instances that each call a dependency twice a second together see
// a hundred calls a second, but each sees two: too few for its breaker to
// shed an outage well, even reaching back past its window (in the
// simulator, 37 % of an outage gets through each, against 3 to 5 %
// shared; see docs/behaviour.md). Shared, every instance's breaker judges
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
// every process with the same prefix share their histories.
//
// # What it does
//
// Calls never wait on Redis: [breaker.Breaker.Allow] reads the judgement
// of the fleet's history made when it was last fed to the breaker (and
// when a bucket finishes), without a lock or an allocation. The loop that
// [Sharer.Start] runs makes, every period ([WithPeriod], one bucket of a
// default breaker, 100 ms), one pipelined round trip for all shared
// breakers: for each, a script publishes this process's history
// ([fleet.Member.History]) in the breaker's hash, under the process's ID,
// and returns the other processes' histories published within the
// breaker's window, added up, which the breaker then decides on
// ([fleet.Member.SetOthers]). Histories older than a window are stale: a
// process that stopped, or lost Redis, leaves the fleet's within a quarter
// window more, and its field is deleted. Each key expires on its own two
// windows and a period after the last process wrote it; no cleanup job is
// needed.
//
// # Layouts
//
// A breaker's hash holds, per process, its history in the field
// "=3 <id>" (layout v3: the Unix ms it was published, a space, then
// [fleet.History]'s binary form) and, while [WithV2] is on (the default),
// its counts in layout v2 in the field "<id>", as redisbreaker before
// histories published them; "=hsum" holds the fresh histories added up.
// The script's documentation (script.go) gives every field.
//
// A fleet in a rolling upgrade mixes both. A v2 sharer skips every field
// that starts with "=", so it never reads a v3 field; it reads the v2
// fields, those of v3 sharers included, as before. (A v3 value in a
// process's own field would not break it either, but it would count the
// value unparsable on every sweep, log it and return [ErrBadData]: hence
// fields of their own.) A v3 sharer reads v2 fields of processes that
// publish no history, converted to a history when the script sweeps: the
// window's calls spread evenly over the window's buckets, the calls read
// back for on light traffic in the block before; the formula judges them
// as the v2 process did, the runs of buckets as even buckets (a window of
// failures is a run of failures). Once every process of the fleet runs
// v3, [WithV2](false) drops the v2 field.
//
// # When Redis fails
//
// Redis down, slow (beyond [WithTimeout]) or answering what the sharer
// cannot use: the breakers decide on their own histories, as unshared
// ones do; the sharer logs it once through log/slog ([WithLogger]), and once
// again when Redis is back, which it finds by itself on a later round. A
// breaker's fleet history also expires on its own one window after it
// was last fed, should the loop stall. Nothing panics, and nothing blocks
// a call. (go-redis reports its own failures to connect through its own
// logger, which redis.SetLogger replaces.)
//
// # Load on Redis
//
// For N processes sharing M breakers, with the default period of 100 ms:
//
//   - round trips: 10·N per second, one per process per period, each a
//     pipeline of M EVALSHA calls (10·N·M scripts a second);
//   - bytes: about 310 sent and 125 to 145 received per breaker per round
//     for a breaker whose window holds calls in every bucket, whatever N
//     (measured by BenchmarkSharer_Sync, which counts the bytes on the
//     client's connection: 307 sent, 123 to 144 received for N from 10 to
//     200; v2 sent 219 and received 59 to 65), so about 4.5 kB/s per
//     process per breaker, 4.5·N·M kB/s in all: 50 processes × 10
//     breakers is 2.2 MB/s;
//   - work: each script reads and writes a few fields of one hash and
//     adds up a window of buckets, the same whatever N; once a quarter
//     window (twice a second by default) one of them reads the whole
//     hash, N fields, to drop stale histories. A round of 10 breakers took
//     about 3 times as long as v2's in BenchmarkSharer_Sync (1.8 ms
//     against 0.67 ms at N = 50, on a shared 2-core machine). Memory: one
//     hash per breaker, of N fields of about 100 to 300 bytes.
//
// A longer period divides all of it: [WithPeriod] of 500 ms is a fifth,
// with fleet histories up to half a second old.
//
// # Tests
//
// The tests start a real redis-server (Debian's package, which make test
// installs) on a free port of 127.0.0.1, without persistence, and kill it
// and start it again mid-run.
//
// A Sharer is safe for concurrent use by multiple goroutines.
package redisbreaker
