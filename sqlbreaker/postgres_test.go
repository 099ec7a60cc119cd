//go:build unix

package sqlbreaker_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/sqlbreaker"
)

// pgServer is a PostgreSQL server this test started on a loopback port,
// in a temporary directory, without durability (fsync off).
type pgServer struct {
	t        testing.TB
	bin      string // the directory of initdb and postgres
	dir      string // the server's directory, owned by the user it runs as
	port     string
	settings []string            // -c name=value, given to postgres
	cred     *syscall.Credential // the postgres user's, when the test runs as root

	cmd  *exec.Cmd
	log  *logWatch
	done chan struct{} // closed when cmd has been waited for
}

// startPostgres initializes a database cluster and starts a server on a
// free port of 127.0.0.1 with the settings given (name=value), and stops
// it when the test ends. make test installs PostgreSQL (Debian's package)
// when it is missing; without it the test fails rather than skips.
//
// initdb and postgres refuse to run as root: as root, they run as the
// postgres user the Debian package creates, which owns the directory.
func startPostgres(t testing.TB, settings ...string) *pgServer {
	t.Helper()
	s := &pgServer{t: t, bin: postgresBin(t), settings: settings}
	s.port = freePort(t)
	var err error
	s.dir, err = os.MkdirTemp("", "sqlbreaker-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(s.dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root, the server runs as the user postgres, which Debian's package creates")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		require.NoError(t, os.Chown(s.dir, uid, gid))
	}

	initdb := s.command("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	out, err := initdb.CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)

	// The port may be taken by another process (another package's test, a
	// client's outgoing connection) before postgres binds it: then another.
	for attempt := 1; ; attempt++ {
		taken, err := s.run()
		if err == nil {
			break
		}
		if !taken || attempt == 5 {
			t.Fatal(err)
		}
		s.port = freePort(t)
	}
	t.Cleanup(s.stop)
	return s
}

// freePort returns a port of 127.0.0.1 nobody listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	require.NoError(t, l.Close())
	return port
}

// postgresBin returns the directory of the newest PostgreSQL's server
// programs: Debian's /usr/lib/postgresql/<version>/bin, or where postgres
// is on the PATH.
func postgresBin(t testing.TB) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	path, err := exec.LookPath("postgres")
	require.NoError(t, err, "PostgreSQL not found: make test installs it (apt-get install postgresql)")
	return filepath.Dir(path)
}

func (s *pgServer) data() string { return filepath.Join(s.dir, "data") }

// command is a program of s.bin, run as the server's user in s.dir, in a
// process group of its own.
func (s *pgServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	return cmd
}

// start runs postgres on s.port and waits until it accepts connections.
// Only TCP on 127.0.0.1: no Unix socket. fsync is off, as a killed server
// leaves its writes in the kernel's cache; commits stay synchronous, as
// the WAL a commit has not yet written would die with the killed server's
// shared memory.
func (s *pgServer) start() {
	s.t.Helper()
	if _, err := s.run(); err != nil {
		s.t.Fatal(err)
	}
}

// run runs postgres as start does, and returns an error quoting its log
// when it exits or is not ready in time; taken reports that its port was
// in use.
func (s *pgServer) run() (taken bool, err error) {
	args := []string{"-D", s.data(), "-h", "127.0.0.1", "-p", s.port, "-k", "",
		"-c", "fsync=off", "-c", "full_page_writes=off"}
	for _, kv := range s.settings {
		args = append(args, "-c", kv)
	}
	s.cmd = s.command("postgres", args...)
	s.log = newLogWatch("database system is ready to accept connections")
	s.cmd.Stderr = s.log
	s.cmd.Stdout = s.log
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return false, err
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.cmd, s.done)
	select {
	case <-s.log.ready:
		return false, nil
	case <-s.done:
		s.cmd = nil
		log := s.log.String()
		return strings.Contains(log, "Address already in use"),
			fmt.Errorf("postgres on port %s exited before accepting connections:\n%s", s.port, log)
	case <-time.After(30 * time.Second):
		s.kill()
		return false, fmt.Errorf("postgres on port %s not ready after 30s:\n%s", s.port, s.log)
	}
}

// kill kills the server and its backends at once, as a crash would, and
// waits for them; the next start recovers the same data directory.
func (s *pgServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// stop shuts the server down (fast shutdown, which leaves no shared memory
// behind), or kills it after 10 s.
func (s *pgServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
		s.cmd = nil
	case <-time.After(10 * time.Second):
		s.kill()
	}
}

// dsn is the URL of the server's database postgres.
func (s *pgServer) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable&connect_timeout=2", s.port)
}

// open returns a database on the server through pgx's database/sql driver,
// guarded by b, closed when the test ends.
func (s *pgServer) open(b breaker.Breaker) *sql.DB {
	s.t.Helper()
	cfg, err := pgx.ParseConfig(s.dsn())
	require.NoError(s.t, err)
	db := sql.OpenDB(must(sqlbreaker.Wrap(stdlib.GetConnector(*cfg), sqlbreaker.WithBreaker(b))))
	s.t.Cleanup(func() { _ = db.Close() })
	return db
}

// logWatch keeps the last lines of a server's log and closes ready at the
// first line that contains want.
type logWatch struct {
	mu    sync.Mutex
	buf   []byte   // guarded by mu; a partial line
	lines []string // guarded by mu; the last 50
	want  string
	ready chan struct{}
	seen  bool // guarded by mu
}

func newLogWatch(want string) *logWatch { return &logWatch{want: want, ready: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		w.lines = append(w.lines, line)
		if len(w.lines) > 50 {
			w.lines = w.lines[1:]
		}
		if !w.seen && strings.Contains(line, w.want) {
			w.seen = true
			close(w.ready)
		}
	}
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// queryOne runs SELECT 1 with a timeout of its own.
func queryOne(db *sql.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var n int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
}

func TestPostgres_killAndRestart(t *testing.T) {
	pg := startPostgres(t)
	b := breaker.MustNew(breaker.WithName("postgres"))
	db := pg.open(b)
	db.SetMaxOpenConns(4)
	ctx := context.Background()

	// Queries work, and the answers of a healthy server are successes.
	_, err := db.ExecContext(ctx, "CREATE TABLE items (id int PRIMARY KEY)")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO items VALUES ($1)", 1)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO items VALUES ($1)", 1)
	require.Error(t, err)
	assert.Equal(t, "23505", sqlbreaker.SQLState(err), "unique violation: %v", err)
	var id int
	require.ErrorIs(t, db.QueryRowContext(ctx, "SELECT id FROM items WHERE id = $1", 2).Scan(&id), sql.ErrNoRows)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "INSERT INTO items VALUES ($1)", 2)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	st, err := db.PrepareContext(ctx, "SELECT count(*) FROM items")
	require.NoError(t, err)
	require.NoError(t, st.QueryRowContext(ctx).Scan(&id))
	assert.Equal(t, 2, id)
	require.NoError(t, st.Close())

	// The caller's cancellation: neither way.
	qctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := db.ExecContext(qctx, "SELECT pg_sleep(30)"); errc <- err }()
	require.Eventually(t, func() bool {
		var n int
		err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'").Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	stats := b.Stats()
	require.Zero(t, stats.TotalFailures, "failures of a healthy server: %v", stats.Reasons)

	// Four connections in the pool, then the server dies.
	conns := make([]*sql.Conn, 4)
	for i := range conns {
		conns[i], err = db.Conn(ctx)
		require.NoError(t, err)
		require.NoError(t, conns[i].PingContext(ctx))
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
	pg.kill()

	// The breaker sheds within a second.
	killed := time.Now()
	var last error
	for time.Since(killed) < time.Second {
		if last = queryOne(db); errors.Is(last, breaker.ErrServiceUnavailable) {
			break
		}
	}
	require.ErrorIs(t, last, breaker.ErrServiceUnavailable, "not shed within a second of the kill")
	t.Logf("shed %v after the kill: %v", time.Since(killed).Round(time.Millisecond), last)

	// Started again on the same port and data, the pool recovers: a query
	// succeeds within a second.
	pg.start()
	ready := time.Now()
	for time.Since(ready) < time.Second {
		if last = queryOne(db); last == nil {
			break
		}
	}
	require.NoError(t, last, "no query succeeded within a second of the restart")
	t.Logf("first success %v after the server was ready", time.Since(ready).Round(time.Millisecond))

	// From then on, no call fails but those the breaker drops: no
	// connection is left broken in the pool. Until the breaker admits 50
	// calls in a row.
	row, drops := 0, 0
	for row < 50 {
		require.Less(t, time.Since(ready), 10*time.Second, "the breaker still drops calls 10s after the restart")
		switch err := queryOne(db); {
		case err == nil:
			row++
		case errors.Is(err, breaker.ErrServiceUnavailable):
			row, drops = 0, drops+1
		default:
			require.NoError(t, err, "a call failed after the server was back")
		}
	}
	t.Logf("50 successes in a row %v after the server was ready, %d drops on the way",
		time.Since(ready).Round(time.Millisecond), drops)
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM items").Scan(&id))
	assert.Equal(t, 2, id, "the data survived the crash")
}

func TestPostgres_tooManyConnections(t *testing.T) {
	pg := startPostgres(t, "max_connections=3", "superuser_reserved_connections=0", "max_wal_senders=0")
	b := breaker.MustNew(breaker.WithName("postgres"))
	db := pg.open(b)
	ctx := context.Background()
	var held []*sql.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	var err error
	for range 10 {
		var c *sql.Conn
		if c, err = db.Conn(ctx); err != nil {
			break
		}
		held = append(held, c)
	}
	require.Error(t, err)
	assert.Equal(t, "53300", sqlbreaker.SQLState(err), "too many connections: %v", err)
	stats := b.Stats()
	assert.Equal(t, int64(1), stats.TotalFailures, "a failure")
	require.NotEmpty(t, stats.Reasons)
	assert.Contains(t, stats.Reasons[0].Text, "connect: ")
	assert.Contains(t, stats.Reasons[0].Text, "53300")

	// A statement timeout is a failure too.
	_, err = held[0].ExecContext(ctx, "SET statement_timeout = 10")
	require.NoError(t, err)
	_, err = held[0].ExecContext(ctx, "SELECT pg_sleep(5)")
	assert.Equal(t, "57014", sqlbreaker.SQLState(err), "statement timeout: %v", err)
	stats = b.Stats()
	assert.Equal(t, int64(2), stats.TotalFailures)
}
