package redisbreaker_test

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// redisServer is a redis-server this test started on a loopback port,
// without persistence.
type redisServer struct {
	t    testing.TB
	addr string
	dir  string
	cmd  *exec.Cmd
}

// startRedis starts a redis-server on a free port of 127.0.0.1 and stops it
// when the test ends. make test installs redis-server (Debian's package)
// when it is missing; without it the test fails rather than skips.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	s := &redisServer{t: t, addr: addr, dir: t.TempDir()}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// start runs redis-server on s.addr and waits until it accepts connections.
func (s *redisServer) start() {
	s.t.Helper()
	path, err := exec.LookPath("redis-server")
	require.NoError(s.t, err, "redis-server not found: make test installs it (apt-get install redis-server)")
	_, port, _ := net.SplitHostPort(s.addr)
	s.cmd = exec.Command(path, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--loglevel", "notice")
	out, err := s.cmd.StdoutPipe()
	require.NoError(s.t, err)
	require.NoError(s.t, s.cmd.Start())
	// redis-server says when it is ready; the first lines tell why not.
	var seen []string
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.Contains(line, "Ready to accept connections") {
			go func() { // keep draining, so that the server never blocks on its log
				for scanner.Scan() {
				}
			}()
			return
		}
		if len(seen) < 20 {
			seen = append(seen, line)
		}
	}
	_ = s.cmd.Wait()
	s.t.Fatalf("redis-server on %s exited before accepting connections:\n%s", s.addr, strings.Join(seen, "\n"))
}

// stop kills the server and waits for it; the next start uses the same port.
func (s *redisServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// client returns a client of the server, closed when the test ends.
func (s *redisServer) client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true,
		MaxRetries: -1, DialTimeout: defaultTestTimeout, ReadTimeout: defaultTestTimeout, WriteTimeout: defaultTestTimeout})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *redisServer) String() string { return fmt.Sprintf("redis-server on %s", s.addr) }
