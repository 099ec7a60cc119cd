//go:build unix

package faulttest

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain stops the servers the tests started. The tests spend their
// time waiting on the network and on the mock clock's pauses, not on a
// processor: unless -parallel says otherwise, they run 16 at a time rather
// than GOMAXPROCS.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "16")
	}
	code := m.Run()
	for _, stop := range stops {
		stop()
	}
	os.Exit(code)
}

// stops are the servers' stop functions, run by TestMain. Appended to
// under startMu.
var (
	startMu sync.Mutex
	stops   []func()
)

// A server process is shared by the tests of a package run: redis-server
// and PostgreSQL each start once, on a free port of 127.0.0.1; each test
// reaches it through a proxy of its own.
type server struct {
	once sync.Once
	addr string
	err  error
}

// start runs run once for every test of the package. A free port may be
// taken by another process (another package's test, a client's outgoing
// connection) before the server binds it: a server that exits on
// "Address already in use" is started again, on another, up to 5 times.
func (s *server) start(run func() (addr string, stop func(), err error)) (string, error) {
	s.once.Do(func() {
		var stop func()
		for range 5 {
			s.addr, stop, s.err = run()
			if s.err == nil || !strings.Contains(s.err.Error(), "Address already in use") {
				break
			}
		}
		if stop != nil {
			startMu.Lock()
			stops = append(stops, stop)
			startMu.Unlock()
		}
	})
	return s.addr, s.err
}

var redisServer, postgresServer server

// redisAddr starts redis-server, without persistence, unless it runs
// already, and returns its address. make test installs redis-server
// (Debian's package) when it is missing; without it the tests fail rather
// than skip.
func redisAddr() (string, error) {
	return redisServer.start(func() (string, func(), error) {
		path, err := exec.LookPath("redis-server")
		if err != nil {
			return "", nil, fmt.Errorf("redis-server not found: make redis installs it (apt-get install redis-server): %w", err)
		}
		addr, err := freePort()
		if err != nil {
			return "", nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		dir, err := os.MkdirTemp("", "faulttest-redis-")
		if err != nil {
			return "", nil, err
		}
		cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--maxclients", "4000")
		out, err := cmd.StdoutPipe()
		if err != nil {
			return "", nil, err
		}
		if err := cmd.Start(); err != nil {
			return "", nil, err
		}
		stop := func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = os.RemoveAll(dir)
		}
		var seen []string
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			line := scanner.Text()
			if strings.Contains(line, "Ready to accept connections") {
				go func() { // drain the log, so that the server never blocks on it
					for scanner.Scan() {
					}
				}()
				return addr, stop, nil
			}
			seen = append(seen, line)
		}
		stop()
		return "", nil, fmt.Errorf("redis-server exited before accepting connections:\n%s", strings.Join(seen, "\n"))
	})
}

// postgresAddr initializes a database cluster and starts PostgreSQL on it,
// without durability (fsync off), unless it runs already, and returns its
// address; its database postgres trusts the user postgres. make test
// installs PostgreSQL (Debian's package) when it is missing; without it
// the tests fail rather than skip. initdb and postgres refuse to run as
// root: as root, they run as the user postgres the Debian package creates,
// which owns the directory.
func postgresAddr() (string, error) {
	return postgresServer.start(func() (string, func(), error) {
		bin, err := postgresBin()
		if err != nil {
			return "", nil, err
		}
		addr, err := freePort()
		if err != nil {
			return "", nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		dir, err := os.MkdirTemp("", "faulttest-pg-")
		if err != nil {
			return "", nil, err
		}
		var cred *syscall.Credential
		if os.Geteuid() == 0 {
			u, err := user.Lookup("postgres")
			if err != nil {
				return "", nil, fmt.Errorf("running as root, the server runs as the user postgres, which Debian's package creates: %w", err)
			}
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
			if err := os.Chown(dir, uid, gid); err != nil {
				return "", nil, err
			}
		}
		command := func(name string, args ...string) *exec.Cmd {
			cmd := exec.Command(filepath.Join(bin, name), args...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C", "TZ=UTC"}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
			return cmd
		}
		data := filepath.Join(dir, "data")
		if out, err := command("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
			"--locale=C", "--no-sync").CombinedOutput(); err != nil {
			_ = os.RemoveAll(dir)
			return "", nil, fmt.Errorf("initdb: %w: %s", err, out)
		}
		// Room for the connections of the tests run in parallel, and for
		// those a hang leaves open: as many as its calls when nothing sheds
		// them.
		cmd := command("postgres", "-D", data, "-h", "127.0.0.1", "-p", port, "-k", "",
			"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=1200")
		out, err := cmd.StderrPipe()
		if err != nil {
			return "", nil, err
		}
		if err := cmd.Start(); err != nil {
			return "", nil, err
		}
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGINT) // fast shutdown
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			_ = os.RemoveAll(dir)
		}
		var seen []string
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			line := scanner.Text()
			if strings.Contains(line, "database system is ready to accept connections") {
				go func() {
					for scanner.Scan() {
					}
				}()
				return addr, stop, nil
			}
			seen = append(seen, line)
		}
		stop()
		return "", nil, fmt.Errorf("postgres exited before accepting connections:\n%s", strings.Join(seen, "\n"))
	})
}

// postgresBin returns the directory of the newest PostgreSQL's server
// programs: Debian's /usr/lib/postgresql/<version>/bin, or where postgres
// is on the PATH.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	path, err := exec.LookPath("postgres")
	if err != nil {
		return "", errors.New("PostgreSQL not found: make postgres installs it (apt-get install postgresql)")
	}
	return filepath.Dir(path), nil
}

// freePort returns a free address on 127.0.0.1.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
