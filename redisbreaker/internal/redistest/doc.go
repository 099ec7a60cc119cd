// Package redistest starts real Redis servers for redisbreaker's tests: a
// single redis-server ([Start]) or a Redis Cluster of several
// ([StartCluster]), each process on free ports of 127.0.0.1, without
// persistence, and stopped when the test ends. The servers are Debian's
// redis-server, formed into a cluster by its redis-cli (redis-tools);
// make test installs both when they are missing, and a test without them
// fails rather than skips.
//
// A cluster can lose a master ([Cluster.KillMaster], SIGKILL) and wait for
// a replica to take its slots over ([Cluster.WaitFailover]). On a 2-core
// machine shared with other work, with redis-server 7.0.15: TODO.
//
// Failing the test, the functions and methods call t.FailNow, so they are
// for the test's goroutine; the clients they return may be used from any.
package redistest
