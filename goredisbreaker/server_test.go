package goredisbreaker_test

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// opTimeout bounds each Redis operation of a test.
const opTimeout = 5 * time.Second

// server is a redis-server a test started on a loopback port, without
// persistence. It can be stopped and started again on the same port.
type server struct {
	t    testing.TB
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the log is drained, after the process exits
}

// newServer starts a redis-server on a free port of 127.0.0.1 and stops it
// when the test ends. make test installs redis-server (Debian's package)
// when it is missing; without it the test fails rather than skips. The
// port may be taken by another process (another package's test, a
// client's outgoing connection) before redis-server binds it: newServer
// then tries another, up to 5 times.
func newServer(t testing.TB) *server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		s := &server{t: t, addr: addr, dir: t.TempDir()}
		taken, err := s.run()
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		if !taken || attempt == 5 {
			t.Fatal(err)
		}
	}
}

// start runs redis-server on s.addr and returns once it accepts
// connections; a server that exits first fails the test.
func (s *server) start() {
	s.t.Helper()
	if _, err := s.run(); err != nil {
		s.t.Fatal(err)
	}
}

// run runs redis-server on s.addr and returns once it accepts connections,
// or an error quoting the first lines it logged once it exited; taken
// reports that its port was in use.
func (s *server) run() (taken bool, err error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return false, fmt.Errorf("redis-server not found: make redis installs it (apt-get install redis-server): %w", err)
	}
	_, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		return false, err
	}
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--loglevel", "notice")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	if err := cmd.Start(); err != nil {
		return false, err
	}
	var seen []string
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.Contains(line, "Ready to accept connections") {
			s.cmd, s.done = cmd, make(chan struct{})
			go func(done chan struct{}) { // drain the log, so that the server never blocks on it
				for scanner.Scan() {
				}
				close(done)
			}(s.done)
			return false, nil
		}
		taken = taken || strings.Contains(line, "Address already in use")
		if len(seen) < 20 {
			seen = append(seen, line)
		}
	}
	_ = cmd.Wait()
	return taken, fmt.Errorf("redis-server on %s exited before accepting connections:\n%s", s.addr, strings.Join(seen, "\n"))
}

// stop kills the server and waits until it is gone; start can follow.
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	_ = s.cmd.Wait()
	s.cmd = nil
}

// options are a test client's: a dial that fails once fails at once
// (go-redis otherwise dials five times, 100 ms apart), and no retries, so
// that each command is one attempt.
func (s *server) options() *redis.Options {
	return &redis.Options{Addr: s.addr, MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
		DialTimeout: opTimeout, ReadTimeout: opTimeout, WriteTimeout: opTimeout}
}

// client returns a client of the server, closed when the test ends.
func (s *server) client() *redis.Client {
	c := redis.NewClient(s.options())
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}
