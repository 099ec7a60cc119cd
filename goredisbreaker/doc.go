// Package goredisbreaker puts a client-side throttling breaker (package
// breaker) in front of each Redis node a go-redis v9 client talks to, as a
// go-redis hook.
//
// One call adds it, to a single-node client, a Sentinel failover client, a
// Cluster or a Ring:
//
//	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
//	if err := goredisbreaker.Instrument(rdb); err != nil {
//		return err
//	}
//
// Each node has a breaker of its own, named "redis:" and the node's address
// ([DefaultKey]) in [breaker.DefaultRegistry] unless [WithRegistry] and
// [WithKey] say otherwise: when one shard of a Cluster is sick, its
// commands are shed and the other shards' go on. A command and a pipeline
// (or transaction) are each one call of the breaker.
//
// # What counts
//
// A command that returns nil or redis.Nil (a missing key) is a success, as
// is an error reply of a healthy server (WRONGTYPE, NOSCRIPT, a syntax
// error, MOVED): [DefaultAcceptable] lists the replies that count as
// failures (LOADING, BUSY, CLUSTERDOWN, READONLY, OOM, ...). A refused or
// broken connection, a timeout and a full pool are failures. A command
// whose caller canceled its context, or sent on a closed client, counts as
// neither. [WithAcceptable] replaces the judgement of error replies and
// other errors; it cannot make redis.Nil or a cancellation a failure.
//
// A pipeline fails when any of its commands fails.
//
// # Commands that pass by
//
// These commands are never dropped nor judged, and neither is a pipeline
// that holds one:
//
//   - a connection's setup, which go-redis sends through the hooks when it
//     opens a connection: HELLO, AUTH, SELECT, READONLY, READWRITE, CLIENT
//     SETNAME, CLIENT SETINFO, CLIENT MAINT_NOTIFICATIONS. Dropping one
//     would close the connection it sets up; its failure is already the
//     failure of the command that waited for the connection;
//   - the commands that block on the server for as long as the caller asks,
//     whose time and timeout say nothing about its health: BLPOP, BRPOP,
//     BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, XREAD and
//     XREADGROUP with BLOCK, WAIT, WAITAOF, SUBSCRIBE, PSUBSCRIBE,
//     SSUBSCRIBE and MONITOR. (go-redis's PubSub sends its SUBSCRIBE
//     commands outside the hooks anyway.)
//
// Dials are not judged on their own: a failed dial fails the command that
// waited for it, which is.
//
// # A dropped command
//
// A command the breaker drops is not sent and takes no connection from the
// pool: it fails at once with an error matching
// breaker.ErrServiceUnavailable (errors.Is), which also names the breaker
// and its latest failure, and go-redis sets it on the command (on each
// command of a dropped pipeline). No connection is closed or marked bad
// because of a drop, and go-redis does not retry it.
//
// # Cost
//
// A command through the hook makes no allocation more than on the bare
// client, and costs a registry lookup, the breaker's AllowCtx and Accept
// (about 80 ns) on top of a round trip of tens of microseconds; see
// docs/guide/goredis.md for the figures.
//
// The hooks are safe for concurrent use by multiple goroutines, as go-redis
// clients are.
package goredisbreaker
