// Package stack runs what ops's end-to-end test and its picture need on
// loopback: examples/service, built from this repository and run as a
// program; an inventory dependency the caller takes down and heals; and a
// real Prometheus (Debian's package) that scrapes the service and
// evaluates a copy of the alerting rules. Everything it starts it stops in
// Close.
package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ErrNoPrometheus is returned when prometheus or promtool is not on the
// PATH.
var ErrNoPrometheus = errors.New("stack: prometheus (Debian's packages prometheus, with promtool, and prometheus-redis-exporter) is not installed: run make prometheus")

// LookPath returns the path of a program of Debian's prometheus packages
// (prometheus, promtool, prometheus-redis-exporter), or an error wrapping
// ErrNoPrometheus.
func LookPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w (%s: %v)", ErrNoPrometheus, name, err)
	}
	return p, nil
}

// Build builds examples/service of the repository at root into dir, in the
// workspace of root's go.work, and returns the program's path.
func Build(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "service")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/service")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("stack: go build ./examples/service: %v\n%s", err, out)
	}
	return bin, nil
}

// Inventory is a dependency on loopback that answers 200, or 503 while
// down.
type Inventory struct {
	srv  *httptest.Server
	down atomic.Bool
}

// StartInventory serves an Inventory on a free port of 127.0.0.1.
func StartInventory() *Inventory {
	inv := &Inventory{}
	inv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inv.down.Load() {
			http.Error(w, "inventory is down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "42")
	}))
	return inv
}

// URL is the inventory's base URL.
func (inv *Inventory) URL() string { return inv.srv.URL }

// SetDown takes the inventory down (true) or heals it (false).
func (inv *Inventory) SetDown(down bool) { inv.down.Store(down) }

// Close stops the inventory.
func (inv *Inventory) Close() { inv.srv.Close() }

// Service is examples/service running as a program.
type Service struct {
	cmd  *exec.Cmd
	done chan struct{}
	logs *syncBuffer

	// The URLs its banner printed.
	Checkout, Metrics, Status, Admin string
}

// StartService runs the program at bin with args plus -addr and -ops on
// free ports of 127.0.0.1, and waits for its banner.
func StartService(bin string, args ...string) (*Service, error) {
	args = append([]string{"-addr", "127.0.0.1:0", "-ops", "127.0.0.1:0"}, args...)
	s := &Service{cmd: orphanProof(exec.Command(bin, args...)), done: make(chan struct{}), logs: &syncBuffer{}}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	urls := make(chan map[string]string, 1)
	go func() {
		seen := map[string]string{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			key, rest, ok := strings.Cut(sc.Text(), ":")
			if fields := strings.Fields(rest); ok && len(fields) > 0 && !strings.HasPrefix(key, " ") {
				seen[key] = fields[0]
			}
			if key == "pricing" {
				urls <- seen
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	select {
	case seen := <-urls:
		s.Checkout, s.Metrics, s.Status, s.Admin = seen["checkout"], seen["metrics"], seen["status"], seen["admin"]
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("stack: the service exited: %s", s.logs)
	case <-time.After(15 * time.Second):
		s.Close()
		return nil, fmt.Errorf("stack: no banner from the service in 15s: %s", s.logs)
	}
}

// OpsAddr is the host:port of the service's operations address, the
// target Prometheus scrapes.
func (s *Service) OpsAddr() string {
	u, _ := url.Parse(s.Metrics)
	return u.Host
}

// Logs returns what the service has logged so far.
func (s *Service) Logs() string { return s.logs.String() }

// Admin sends method to the service's admin endpoint with query, and
// returns an error unless it answers 200.
func (s *Service) AdminDo(method, query string) error {
	req, err := http.NewRequest(method, s.Admin+"?"+query, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("stack: %s %s?%s: %s: %s", method, s.Admin, query, resp.Status, body)
	}
	return nil
}

// Close stops the service: SIGTERM, then SIGKILL after 10 s.
func (s *Service) Close() { stop(s.cmd, s.done) }

// Target is what Prometheus scrapes: a job's name and its host:port.
type Target struct{ Job, Addr string }

// Prometheus is a prometheus server of its own on loopback.
type Prometheus struct {
	cmd  *exec.Cmd
	done chan struct{}
	logs *syncBuffer

	// URL is its base URL, http://127.0.0.1:PORT.
	URL string
}

// StartPrometheus writes a configuration into dir that scrapes each of
// targets (a job's name and its host:port, path /metrics) every second
// and evaluates rules (the text of a rule file) every second, starts
// prometheus with its data in dir, and waits until it is ready.
func StartPrometheus(dir string, targets []Target, rules []byte) (*Prometheus, error) {
	bin, err := LookPath("prometheus")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), rules, 0o644); err != nil {
		return nil, err
	}
	config := `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - alerts.yml
scrape_configs:
`
	for _, t := range targets {
		config += fmt.Sprintf("  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", t.Job, t.Addr)
	}
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return nil, err
	}
	// A free port, found by listening on it: another program may take it
	// before prometheus does, so a prometheus that exits early is started
	// again on another.
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p := &Prometheus{done: make(chan struct{}), logs: &syncBuffer{}, URL: "http://127.0.0.1:" + strconv.Itoa(port)}
		p.cmd = orphanProof(exec.Command(bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address=127.0.0.1:"+strconv.Itoa(port), "--log.level=warn"))
		p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
		if err := p.cmd.Start(); err != nil {
			return nil, err
		}
		go func() { _ = p.cmd.Wait(); close(p.done) }()
		if lastErr = p.waitReady(30 * time.Second); lastErr == nil {
			return p, nil
		}
		p.Close()
	}
	return nil, lastErr
}

func (p *Prometheus) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("stack: prometheus exited: %s", p.logs)
		case <-tick.C:
		}
	}
	return fmt.Errorf("stack: prometheus not ready in %v: %s", timeout, p.logs)
}

// Close stops prometheus: SIGTERM, then SIGKILL after 10 s.
func (p *Prometheus) Close() { stop(p.cmd, p.done) }

// Series is one series of a query's answer: its labels, and its points
// (one for an instant query).
type Series struct {
	Labels map[string]string
	Points []Point
}

// Point is a sample of a series.
type Point struct {
	T time.Time
	V float64
}

// Query evaluates expr at the latest time (an instant query).
func (p *Prometheus) Query(ctx context.Context, expr string) ([]Series, error) {
	return p.get(ctx, "/api/v1/query", url.Values{"query": {expr}})
}

// QueryRange evaluates expr from start to end every step.
func (p *Prometheus) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	return p.get(ctx, "/api/v1/query_range", url.Values{"query": {expr},
		"start": {formatTime(start)}, "end": {formatTime(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// get asks the query API and decodes its vector or matrix.
func (p *Prometheus) get(ctx context.Context, path string, q url.Values) ([]Series, error) {
	var answer struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
				Values [][]any           `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := p.getJSON(ctx, path+"?"+q.Encode(), &answer); err != nil {
		return nil, err
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("stack: %s %q: %s: %s", path, q.Get("query"), answer.ErrorType, answer.Error)
	}
	var out []Series
	for _, r := range answer.Data.Result {
		s := Series{Labels: r.Metric}
		values := r.Values
		if r.Value != nil {
			values = [][]any{r.Value}
		}
		for _, v := range values {
			pt, err := point(v)
			if err != nil {
				return nil, fmt.Errorf("stack: %s %q: %w", path, q.Get("query"), err)
			}
			s.Points = append(s.Points, pt)
		}
		out = append(out, s)
	}
	return out, nil
}

// point decodes [unix seconds, "value"].
func point(v []any) (Point, error) {
	if len(v) != 2 {
		return Point{}, fmt.Errorf("a sample of %d values", len(v))
	}
	ts, ok1 := v[0].(float64)
	s, ok2 := v[1].(string)
	if !ok1 || !ok2 {
		return Point{}, fmt.Errorf("a sample %v", v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Point{}, err
	}
	return Point{T: time.UnixMilli(int64(ts * 1000)), V: f}, nil
}

// Alert is an alert as Prometheus's API lists it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
}

// Alerts lists the alerts pending or firing.
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	var answer struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	if err := p.getJSON(ctx, "/api/v1/alerts", &answer); err != nil {
		return nil, err
	}
	return answer.Data.Alerts, nil
}

// Targets returns the health of each scrape target ("up", "down",
// "unknown") by its address.
func (p *Prometheus) Targets(ctx context.Context) (map[string]string, error) {
	var answer struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := p.getJSON(ctx, "/api/v1/targets", &answer); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range answer.Data.ActiveTargets {
		out[t.ScrapeURL] = t.Health
	}
	return out, nil
}

func (p *Prometheus) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("stack: GET %s: %s: %w: %.200s", path, resp.Status, err, body)
	}
	return nil
}

var (
	forLine    = regexp.MustCompile(`(?m)^(\s*for:\s*)\S+\s*$`)
	rangeWidth = regexp.MustCompile(`\[\d+[smhdwy]\]`)
)

// Shorten returns rules (a rule file's text) with every `for:` duration
// set to forDur and every range selector's width to width, so that alerts
// meant to wait minutes in production fire and resolve in seconds against
// a Prometheus that scrapes and evaluates every second.
func Shorten(rules []byte, forDur, width string) []byte {
	out := forLine.ReplaceAll(rules, []byte("${1}"+forDur))
	return rangeWidth.ReplaceAll(out, []byte("["+width+"]"))
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// stop ends a program this package started and waits for it.
func stop(cmd *exec.Cmd, done chan struct{}) {
	if cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// syncBuffer is a bytes.Buffer a program's output goes to while it is read.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Grafana expands a dashboard query as Grafana would with every job and
// every breaker selected ($job and $breaker ".+") and width for
// $__rate_interval.
func Grafana(expr, width string) string {
	return strings.NewReplacer(`$job`, `.+`, `$breaker`, `.+`, `$__rate_interval`, width).Replace(expr)
}

// Redis is a redis-server on loopback, without persistence, that the
// caller stops and starts again on the same port.
type Redis struct {
	dir, port string
	cmd       *exec.Cmd
	done      chan struct{}
}

// StartRedis starts redis-server (Debian's package; make redis installs
// it) on a free port of 127.0.0.1, in dir. Another program may take the
// port before redis-server does: a server that exits on "Address already
// in use" is started again on another, up to 5 times.
func StartRedis(dir string) (*Redis, error) {
	var err error
	for range 5 {
		var port int
		if port, err = freePort(); err != nil {
			return nil, err
		}
		r := &Redis{dir: dir, port: strconv.Itoa(port)}
		if err = r.Start(); err == nil {
			return r, nil
		}
		if !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, err
}

// Addr is the server's host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + r.port }

// Start starts the server again on its port, after Stop.
func (r *Redis) Start() error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("stack: redis-server is not installed: run make redis: %w", err)
	}
	cmd := orphanProof(exec.Command(bin, "--bind", "127.0.0.1", "--port", r.port, "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--daemonize", "no"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	r.cmd, r.done = cmd, make(chan struct{})
	ready := make(chan struct{})
	var seen syncBuffer
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(&seen, sc.Text())
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, out) // so that the server never blocks on its log
	}()
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(r.done)
	select {
	case <-ready:
		return nil
	case <-r.done:
		return fmt.Errorf("stack: redis-server exited: %s", seen.String())
	case <-time.After(10 * time.Second):
		r.Stop()
		return fmt.Errorf("stack: redis-server not ready in 10s: %s", seen.String())
	}
}

// Stop kills the server: to its clients, Redis is gone at once.
func (r *Redis) Stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// Exporter is prometheus-redis-exporter (Debian's package) watching a
// Redis, on loopback.
type Exporter struct {
	cmd  *exec.Cmd
	done chan struct{}
	logs *syncBuffer
	addr string
}

// StartExporter starts prometheus-redis-exporter on a free port of
// 127.0.0.1, pointed at the Redis at redisAddr, and waits until it serves
// its metrics.
func StartExporter(redisAddr string) (*Exporter, error) {
	bin, err := LookPath("prometheus-redis-exporter")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	e := &Exporter{done: make(chan struct{}), logs: &syncBuffer{}, addr: "127.0.0.1:" + strconv.Itoa(port)}
	e.cmd = orphanProof(exec.Command(bin, "-redis.addr", "redis://"+redisAddr, "-web.listen-address", e.addr))
	e.cmd.Stdout, e.cmd.Stderr = e.logs, e.logs
	if err := e.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = e.cmd.Wait(); close(e.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + e.addr + "/metrics")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e, nil
			}
		}
		select {
		case <-e.done:
			return nil, fmt.Errorf("stack: prometheus-redis-exporter exited: %s", e.logs)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.Close()
			return nil, fmt.Errorf("stack: prometheus-redis-exporter not serving in 15s: %s", e.logs)
		}
	}
}

// Addr is the exporter's host:port, the target Prometheus scrapes.
func (e *Exporter) Addr() string { return e.addr }

// Close stops the exporter.
func (e *Exporter) Close() { stop(e.cmd, e.done) }
