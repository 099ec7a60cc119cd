package redistest

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Timeout bounds each operation of the clients this package returns: dial,
// read and write.
const Timeout = 5 * time.Second

// A Server is a redis-server a test started on a loopback port, without
// persistence. Its methods are for the test's goroutine.
type Server struct {
	t    testing.TB
	addr string
	dir  string
	args []string // beyond the address, the directory and persistence
	cmd  *exec.Cmd
	ctl  *redis.Client // the harness's own client; see control
}

// Start starts a redis-server on a free port of 127.0.0.1 and stops it when
// the test ends. make test installs redis-server (Debian's package) when it
// is missing; without it the test fails rather than skips.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, addr: freeAddr(t), dir: t.TempDir()}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// freeAddr returns an address of 127.0.0.1 with a port nobody listens on
// now; another process may take it before the server does, which a test
// sees as the server failing to start.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// Addr returns the server's address, 127.0.0.1:port. It stays the same
// across Stop and Start.
func (s *Server) Addr() string { return s.addr }

// Start runs redis-server on the server's address and waits until it
// accepts connections; after [Server.Stop] it starts the server again, on
// the same port and with the same directory (a cluster node keeps its
// cluster config file there, and so its identity). Calling it while the
// server runs fails the test.
func (s *Server) Start() {
	s.t.Helper()
	require.Nil(s.t, s.cmd, "%s already runs", s)
	path, err := exec.LookPath("redis-server")
	require.NoError(s.t, err, "redis-server not found: make test installs it (apt-get install redis-server)")
	_, port, _ := net.SplitHostPort(s.addr)
	args := append([]string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--loglevel", "notice"}, s.args...)
	cmd := exec.Command(path, args...)
	out, err := cmd.StdoutPipe()
	require.NoError(s.t, err)
	require.NoError(s.t, cmd.Start())
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
			s.cmd = cmd
			return
		}
		if len(seen) < 20 {
			seen = append(seen, line)
		}
	}
	_ = cmd.Wait()
	s.t.Fatalf("%s exited before accepting connections:\n%s", s, strings.Join(seen, "\n"))
}

// Stop kills the server (SIGKILL, so nothing is flushed or handed over)
// and waits for it to exit; [Server.Start] runs it again. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Running reports whether the server was started and not stopped since.
func (s *Server) Running() bool { return s.cmd != nil }

// Client returns a client of the server, closed when the test ends. Each
// operation gives up after [Timeout] or the context's deadline, whichever
// comes first, and is not retried.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true,
		MaxRetries: -1, DialTimeout: Timeout, ReadTimeout: Timeout, WriteTimeout: Timeout})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// control returns the harness's own client of the server, made on first
// use and closed when the test ends. Unlike [Server.Client]'s, it retries
// an operation on a fresh connection after a broken one, so that it works
// across Stop and Start.
func (s *Server) control() *redis.Client {
	if s.ctl == nil {
		s.ctl = redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true,
			DialTimeout: Timeout, ReadTimeout: Timeout, WriteTimeout: Timeout})
		ctl := s.ctl
		s.t.Cleanup(func() { _ = ctl.Close() })
	}
	return s.ctl
}

// String names the server for failure messages.
func (s *Server) String() string { return "redis-server on " + s.addr }
