package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
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
	return startNew(t, 1, func([]string) []string { return nil })
}

// portAttempts bounds how often [startNew] picks other ports after another
// process took one of the server's before it bound it.
const portAttempts = 5

// errPortTaken is the cause [Server.start] gives when redis-server could
// not listen on one of its ports because another process already does.
var errPortTaken = errors.New("a port was taken by another process")

// startNew starts a server that never ran before on free ports of
// 127.0.0.1: the first for clients, the others given to args, which returns
// the server's arguments beyond the address, the directory and
// persistence. A free port may be taken by another process (a test of
// another package, a client's outgoing connection) before redis-server
// binds it; startNew then tries again on other ports and in another
// directory, up to [portAttempts] times. The server is stopped when the
// test ends.
func startNew(t testing.TB, ports int, args func(ports []string) []string) *Server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		free := freePorts(t, ports)
		s := &Server{t: t, addr: net.JoinHostPort("127.0.0.1", free[0]), dir: t.TempDir(), args: args(free[1:])}
		err := s.start()
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			t.Fatal(err)
		}
	}
}

// freePorts returns n distinct ports of 127.0.0.1 that nobody listens on
// now, below the kernel's range of ephemeral ports where it has one (see
// [pickRange]). All n are held at once, so that none is returned twice;
// once they are released another process may take one, which [startNew]
// handles.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	lo, hi := pickRange()
	ports := make([]string, n)
	for i := range ports {
		l := listenBelow(lo, hi)
		if l == nil {
			var err error
			l, err = net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
		}
		defer func() { _ = l.Close() }()
		_, ports[i], _ = net.SplitHostPort(l.Addr().String())
	}
	return ports
}

// pickSpan is how many ports below the ephemeral range [freePorts] picks
// from, and pickTries how many of them it tries at random for one port.
const (
	pickSpan  = 10_000
	pickTries = 50
)

// pickRange returns the ports [freePorts] picks from, [lo, hi): the
// pickSpan ports below the kernel's ephemeral range, from which a
// client's outgoing connection takes its own port. A server stopped to
// be started again (a cluster node's restart) leaves its port free
// meanwhile, and an outgoing connection could take it there; below the
// range, only another test picking at random could. It returns 0, 0 where
// the range is unknown (not Linux) or leaves too little room below it.
func pickRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < pickSpan+1024 {
		return 0, 0
	}
	return low - pickSpan, low
}

// listenBelow listens on a free port of [lo, hi) of 127.0.0.1 picked at
// random, or returns nil when pickTries ports were all taken (or the
// range is empty).
func listenBelow(lo, hi int) net.Listener {
	if hi <= lo {
		return nil
	}
	for range pickTries {
		port := lo + rand.IntN(hi-lo)
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			return l
		}
	}
	return nil
}

// Addr returns the server's address, 127.0.0.1:port. It stays the same
// across Stop and Start.
func (s *Server) Addr() string { return s.addr }

// Start runs redis-server on the server's address and waits until it
// accepts connections; after [Server.Stop] it starts the server again, on
// the same port and with the same directory (a cluster node keeps its
// cluster config file there, and so its identity). Calling it while the
// server runs fails the test, and so does a server that exits before it
// accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	require.Nil(s.t, s.cmd, "%s already runs", s)
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

// start runs redis-server and waits until it accepts connections. Its
// error, when it exits first, quotes the first lines it logged, and wraps
// [errPortTaken] when one of its ports was in use.
func (s *Server) start() error {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server not found: make test installs it (apt-get install redis-server): %w", err)
	}
	_, port, _ := net.SplitHostPort(s.addr)
	args := append([]string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--loglevel", "notice"}, s.args...)
	cmd := exec.Command(path, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// redis-server says when it is ready; the first lines tell why not.
	var seen []string
	taken := false
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.Contains(line, "Ready to accept connections") {
			go func() { // keep draining, so that the server never blocks on its log
				for scanner.Scan() {
				}
			}()
			s.cmd = cmd
			return nil
		}
		taken = taken || strings.Contains(line, "Address already in use")
		if len(seen) < 20 {
			seen = append(seen, line)
		}
	}
	_ = cmd.Wait()
	err = fmt.Errorf("%s exited before accepting connections:\n%s", s, strings.Join(seen, "\n"))
	if taken {
		err = fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
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
