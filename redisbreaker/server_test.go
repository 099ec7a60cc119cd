package redisbreaker_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/redisbreaker/internal/redistest"
)

// redisServer is a redis-server this test started on a loopback port,
// without persistence: redistest.Server, under the names the tests use.
type redisServer struct {
	*redistest.Server
	addr string
}

// startRedis starts a redis-server on a free port of 127.0.0.1 and stops it
// when the test ends. make test installs redis-server (Debian's package)
// when it is missing; without it the test fails rather than skips.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	s := redistest.Start(t)
	return &redisServer{Server: s, addr: s.Addr()}
}

// start runs the server again on the same port and waits until it accepts
// connections.
func (s *redisServer) start() { s.Start() }

// stop kills the server and waits for it; the next start uses the same port.
func (s *redisServer) stop() { s.Stop() }

// client returns a client of the server, closed when the test ends.
func (s *redisServer) client() *redis.Client { return s.Client() }
