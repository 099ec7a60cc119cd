// Package redistest starts real Redis servers for redisbreaker's tests: a
// single redis-server ([Start]) or a Redis Cluster of several
// ([StartCluster]), each process on free ports of 127.0.0.1, without
// persistence, and stopped when the test ends. The servers are Debian's
// redis-server, formed into a cluster by its redis-cli (redis-tools);
// make test installs both when they are missing, and a test without them
// fails rather than skips.
//
// A cluster can lose a master ([Cluster.KillMaster], SIGKILL) and wait for
// a replica to take its slots over ([Cluster.WaitFailover]), then take the
// master back as a replica ([Cluster.Restart]). Measured with
// redis-server 7.0.15 on a shared 2-core machine, under go test -race:
// 3 masters with a replica each form a cluster in about 2.1 s (redis-cli
// waits a second for the nodes to meet), a replica has taken over
// 2.1–2.6 s after the kill with [NodeTimeout] at 1 s (1.6–2.0 s at
// 500 ms), and the restarted master is a replica again within 0.1 s.
//
// Failing the test, the functions and methods call t.FailNow, so they are
// for the test's goroutine; the clients they return may be used from any.
package redistest
