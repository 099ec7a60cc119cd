// Command fleetload measures what sharing breakers costs Redis: it starts
// a redis-server of its own on a free port of 127.0.0.1, runs N sharers
// (processes of a fleet, in this one process, each with its own
// connection) of M breakers each, every breaker taking calls, and prints
// Redis's CPU per process per breaker per second (INFO cpu), its
// commands (INFO commandstats), how many processes the newest blocks
// count, and how old each breaker's view of its fleet is (Sharer.Status).
//
//	make fleet-load
//	cd redisbreaker && go run ./internal/fleetload -fleets 10x10,50x10,200x10 -duration 10s
//
// -hog F keeps Redis busy F of its time with a script that spins, as a
// smaller share of a core would; -latency D holds each of Redis's answers
// for D through a proxy on loopback, as a slow server would: the probe
// shows how the fleet's rounds slow down (round trips per process, the
// least and the most) and whether every process stays counted.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleetload:", err)
		os.Exit(1)
	}
}

type config struct {
	fleets   []fleetSize
	duration time.Duration
	warmup   time.Duration
	rate     int
	hog      float64
	period   time.Duration
	latency  time.Duration
}

type fleetSize struct {
	processes, breakers int
}

func parseFlags(args []string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("fleetload", flag.ContinueOnError)
	fs.SetOutput(out)
	fleets := fs.String("fleets", "10x10,50x10,200x10", "fleets to run, one after the other: processes x breakers, comma-separated")
	var c config
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to measure each fleet")
	fs.DurationVar(&c.warmup, "warmup", 3*time.Second, "how long each fleet runs before it is measured")
	fs.IntVar(&c.rate, "rate", 20, "calls a second to each breaker of each process")
	fs.Float64Var(&c.hog, "hog", 0, "the share of Redis's time (0 to 0.98) a spinning script takes")
	fs.DurationVar(&c.period, "period", redisbreaker.DefaultPeriod, "the sharers' period (WithPeriod)")
	fs.DurationVar(&c.latency, "latency", 0, "hold each of Redis's answers this long on its way to the sharers (a proxy on loopback): a slow server")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, f := range strings.Split(*fleets, ",") {
		f = strings.TrimSpace(f)
		p, m, ok := strings.Cut(f, "x")
		n, err1 := strconv.Atoi(p)
		k, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || n < 1 || k < 1 || n*k > 20_000 {
			return c, fmt.Errorf("-fleets: %q: want processes x breakers, such as 50x10, at most 20,000 in all", f)
		}
		c.fleets = append(c.fleets, fleetSize{n, k})
	}
	switch {
	case c.duration <= 0 || c.warmup < 0:
		return c, fmt.Errorf("-duration %v, -warmup %v: must be positive", c.duration, c.warmup)
	case c.rate < 0 || c.rate > 10_000:
		return c, fmt.Errorf("-rate %d: must be from 0 to 10,000", c.rate)
	case c.latency < 0 || c.latency > 10*time.Second:
		return c, fmt.Errorf("-latency %v: must be from 0 to 10s", c.latency)
	case c.hog < 0 || c.hog > 0.98:
		return c, fmt.Errorf("-hog %v: must be from 0 to 0.98", c.hog)
	}
	return c, nil
}

func run(args []string, out io.Writer) error {
	cfg, err := parseFlags(args, out)
	if err != nil {
		return err
	}
	addr, stop, err := startRedis()
	if err != nil {
		return err
	}
	defer stop()
	target := addr
	if cfg.latency > 0 {
		proxy, stop, err := startLatencyProxy(addr, cfg.latency)
		if err != nil {
			return err
		}
		defer stop()
		target = proxy
	}
	fmt.Fprintf(out, "redis-server on %s; period %v, %d calls/s to each breaker, hog %.0f %%, answers held %v, measured %v after %v\n\n",
		addr, cfg.period, cfg.rate, 100*cfg.hog, cfg.latency, cfg.duration, cfg.warmup)
	fmt.Fprintln(out, "| processes × breakers | Redis CPU (s per s) | CPU µs per process per breaker per s | commands' µs per process per breaker per s | commands/s | µs per command | rounds per breaker per s | round trips per process per s, least / most | processes counted (newest full block) | view age p50 / max | period | errors |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	var breakdowns []string
	for _, f := range cfg.fleets {
		r, err := measure(addr, target, cfg, f)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "| %d × %d | %.3f | %.1f | %.1f | %.0f | %.2f | %.2f | %.1f / %.1f | %s | %v / %v | %v | %d |\n",
			f.processes, f.breakers, r.cpu, r.cpu*1e6/float64(f.processes*f.breakers),
			r.usecPerCommand*r.commands/float64(f.processes*f.breakers), r.commands, r.usecPerCommand,
			r.rounds, r.tripsLeast, r.tripsMost, r.counted, r.ageP50.Round(time.Millisecond), r.ageMax.Round(time.Millisecond), r.period, r.errors)
		breakdowns = append(breakdowns, fmt.Sprintf("%d × %d: %s", f.processes, f.breakers, strings.Join(r.breakdown, ", ")))
	}
	fmt.Fprintln(out, "\nper command (INFO commandstats, calls a second and µs each):")
	for _, b := range breakdowns {
		fmt.Fprintln(out, "  "+b)
	}
	return nil
}

type result struct {
	cpu, commands, usecPerCommand, rounds float64
	counted                               string
	ageP50, ageMax                        time.Duration
	period                                time.Duration
	errors                                int
	breakdown                             []string
	tripsLeast, tripsMost                 float64
}

// tripCounter counts a client's pipelines: a sharer's round trips.
type tripCounter struct{ n atomic.Int64 }

func (t *tripCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (t *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (t *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmds)
	}
}

// startLatencyProxy forwards connections on a loopback port to addr,
// holding each chunk of Redis's answers for latency; it returns the
// proxy's address and a function that stops it.
func startLatencyProxy(addr string, latency time.Duration) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				_ = c.Close()
				continue
			}
			go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						time.Sleep(latency)
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String(), func() { _ = l.Close() }, nil
}

func measure(addr, target string, cfg config, f fleetSize) (result, error) {
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	if err := admin.FlushAll(ctx).Err(); err != nil {
		return result{}, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var clients []*redis.Client
	trips := make([]*tripCounter, f.processes)
	var sharers []*redisbreaker.Sharer
	var breakers [][]breaker.Breaker
	for p := range f.processes {
		c := redis.NewClient(&redis.Options{Addr: target, PoolSize: 2})
		trips[p] = &tripCounter{}
		c.AddHook(trips[p])
		clients = append(clients, c)
		s, err := redisbreaker.New(c, redisbreaker.WithLogger(quiet), redisbreaker.WithPeriod(cfg.period))
		if err != nil {
			return result{}, err
		}
		var bs []breaker.Breaker
		for m := range f.breakers {
			b := breaker.MustNew(breaker.WithName(fmt.Sprintf("dependency-%02d", m)))
			if err := s.Share(b); err != nil {
				return result{}, err
			}
			bs = append(bs, b)
		}
		sharers, breakers = append(sharers, s), append(breakers, bs)
	}
	defer func() {
		for _, s := range sharers {
			_ = s.Close()
		}
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	stopCalls := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the calls, 5 % of them failing, every 10 ms
		defer wg.Done()
		r := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var owed float64
		for {
			select {
			case <-stopCalls:
				return
			case <-tick.C:
			}
			owed += float64(cfg.rate) / 100
			n := int(owed)
			owed -= float64(n)
			for _, bs := range breakers {
				for _, b := range bs {
					for range n {
						if c, err := b.Allow(); err == nil {
							if r.IntN(20) == 0 {
								c.Reject("boom")
							} else {
								c.Accept()
							}
						}
					}
				}
			}
		}
	}()
	if cfg.hog > 0 {
		wg.Add(1)
		go hog(ctx, addr, cfg.hog, stopCalls, &wg)
	}
	for i, s := range sharers { // spread the processes' rounds over a period
		if err := s.Start(); err != nil {
			return result{}, err
		}
		time.Sleep(cfg.period / time.Duration(len(sharers)) * time.Duration(min(i, 1)))
	}
	time.Sleep(cfg.warmup)
	before, err := info(ctx, admin)
	if err != nil {
		return result{}, err
	}
	tripsBefore := make([]int64, len(trips))
	for i, t := range trips {
		tripsBefore[i] = t.n.Load()
	}
	start := time.Now()
	time.Sleep(cfg.duration)
	after, err := info(ctx, admin)
	if err != nil {
		return result{}, err
	}
	elapsed := time.Since(start).Seconds()
	least, most := -1.0, 0.0
	for i, t := range trips {
		x := float64(t.n.Load()-tripsBefore[i]) / elapsed
		if least < 0 || x < least {
			least = x
		}
		most = max(most, x)
	}
	var ages []time.Duration
	var period time.Duration
	now := time.Now()
	for _, s := range sharers {
		for m := range f.breakers {
			st, err := s.Status(fmt.Sprintf("dependency-%02d", m))
			if err != nil || st.Synced.IsZero() {
				ages = append(ages, time.Hour)
				continue
			}
			ages = append(ages, now.Sub(st.Synced))
			period = max(period, st.Period)
		}
	}
	close(stopCalls)
	wg.Wait()
	slices.Sort(ages)
	counted, err := countedProcesses(ctx, admin)
	if err != nil {
		return result{}, err
	}
	r := result{cpu: (after.cpu - before.cpu) / elapsed, ageP50: ages[len(ages)/2], ageMax: ages[len(ages)-1],
		period: period, counted: counted, tripsLeast: least, tripsMost: most}
	var calls, usec float64
	for name, c := range after.commands {
		if name == "info" || name == "flushall" || name == "ping" || name == "time" || cfg.hog > 0 && (name == "eval" || name == "evalsha") {
			continue
		}
		calls += c.calls - before.commands[name].calls
		usec += c.usec - before.commands[name].usec
	}
	r.commands = calls / elapsed
	if calls > 0 {
		r.usecPerCommand = usec / calls
	}
	for _, name := range []string{"bitfield", "mget", "pexpire", "evalsha"} {
		c := after.commands[name].calls - before.commands[name].calls
		if c > 0 {
			r.breakdown = append(r.breakdown, fmt.Sprintf("%s %.0f/s %.2f µs", name, c/elapsed,
				(after.commands[name].usec-before.commands[name].usec)/c))
		}
	}
	r.rounds = (after.commands["bitfield"].calls - before.commands["bitfield"].calls) / elapsed / float64(f.processes*f.breakers)
	r.errors = int(after.errors - before.errors)
	return r, nil
}

// countedProcesses returns, over the breakers, the fewest and the most
// processes that a breaker's newest full block counted.
func countedProcesses(ctx context.Context, rdb *redis.Client) (string, error) {
	keys, err := rdb.Keys(ctx, redisbreaker.DefaultPrefix+"{*}:4:*").Result()
	if err != nil {
		return "", err
	}
	newest := make(map[string]int64) // per breaker, its newest block
	for _, k := range keys {
		i := strings.LastIndexByte(k, ':')
		n, err := strconv.ParseInt(k[i+1:], 10, 64)
		if err != nil {
			continue
		}
		newest[k[:i]] = max(newest[k[:i]], n)
	}
	lo, hi := int64(-1), int64(0)
	for base, n := range newest {
		v, err := rdb.Get(ctx, base+":"+strconv.FormatInt(n-1, 10)).Bytes()
		if err != nil {
			return "", fmt.Errorf("the full block before %s:%d: %w", base, n, err)
		}
		var c int64
		if len(v) >= 4*61 {
			c = int64(v[4*60])<<24 | int64(v[4*60+1])<<16 | int64(v[4*60+2])<<8 | int64(v[4*60+3])
		}
		if lo < 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	if lo == hi {
		return strconv.FormatInt(lo, 10), nil
	}
	return fmt.Sprintf("%d–%d", lo, hi), nil
}

type stats struct {
	cpu      float64
	errors   float64
	commands map[string]struct{ calls, usec float64 }
}

func info(ctx context.Context, rdb *redis.Client) (stats, error) {
	s := stats{commands: make(map[string]struct{ calls, usec float64 })}
	text, err := rdb.Info(ctx, "cpu", "commandstats", "errorstats").Result()
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case key == "used_cpu_sys" || key == "used_cpu_user":
			v, _ := strconv.ParseFloat(val, 64)
			s.cpu += v
		case strings.HasPrefix(key, "errorstat_"):
			_, n, _ := strings.Cut(val, "count=")
			v, _ := strconv.ParseFloat(n, 64)
			s.errors += v
		case strings.HasPrefix(key, "cmdstat_"):
			var c struct{ calls, usec float64 }
			for _, f := range strings.Split(val, ",") {
				k, v, _ := strings.Cut(f, "=")
				x, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "calls":
					c.calls = x
				case "usec":
					c.usec = x
				}
			}
			s.commands[strings.TrimPrefix(key, "cmdstat_")] = c
		}
	}
	return s, sc.Err()
}

// hog keeps Redis busy share of its time: a script that spins for 10 ms,
// then a pause of the rest.
func hog(ctx context.Context, addr string, share float64, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	spin := redis.NewScript(`local t = redis.call('TIME'); local stop = t[1] * 1e6 + t[2] + tonumber(ARGV[1])
while true do local n = redis.call('TIME'); if n[1] * 1e6 + n[2] >= stop then break end end return 0`)
	const busy = 10 * time.Millisecond
	idle := time.Duration(float64(busy) * (1 - share) / share)
	for {
		select {
		case <-stop:
			return
		default:
		}
		_ = spin.Run(ctx, c, nil, busy.Microseconds()).Err()
		time.Sleep(idle)
	}
}

// startRedis starts a redis-server on a free port of 127.0.0.1, without
// persistence, and returns its address and a function that stops it.
func startRedis() (string, func(), error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, fmt.Errorf("redis-server not found (make redis installs it): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "fleetload")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", dir, "--maxclients", "30000", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c.Ping(context.Background()).Err() == nil {
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer within 10 s", addr)
		}
	}
}
