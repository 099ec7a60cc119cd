package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// redisProcess is a redis-server this program started.
type redisProcess struct {
	addr string
	dir  string
	cmd  *exec.Cmd
}

// startRedis starts a redis-server on a free port of 127.0.0.1, without
// persistence (no RDB snapshot, no append-only file), in a temporary
// directory, and waits until it accepts connections.
func startRedis(ctx context.Context) (*redisProcess, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found (Debian: apt-get install redis-server), or give -redis host:port: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	if err := l.Close(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fleet-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, "--bind", "127.0.0.1", "--port", port, "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &redisProcess{addr: addr, dir: dir, cmd: cmd}
	// redis-server says when it is ready; the first lines tell why not.
	var seen []string
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.Contains(line, "Ready to accept connections") {
			go func() { // drain its log until it exits
				for scanner.Scan() {
				}
			}()
			return r, nil
		}
		if len(seen) < 20 {
			seen = append(seen, line)
		}
	}
	r.stop()
	return nil, fmt.Errorf("redis-server on %s exited before accepting connections:\n%s", addr, strings.Join(seen, "\n"))
}

// stop kills the server, waits for it and removes its directory.
func (r *redisProcess) stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	os.RemoveAll(r.dir)
}
