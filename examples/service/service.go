package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/criticality"
	"github.com/srebreaker/srebreaker/httpbreaker"
	"github.com/srebreaker/srebreaker/proba"
	"github.com/srebreaker/srebreaker/prombreaker"
	"github.com/srebreaker/srebreaker/statuspage"
)

// The names of the dependencies' breakers, and the key of the route's.
const (
	inventoryName = "inventory"
	pricingName   = "pricing"
	checkoutKey   = "server:GET /checkout"
)

// config is what the flags set; the logger, the clock and the random
// source are the tests' way in.
type config struct {
	addr, ops          string        // public and operations addresses
	inventory, pricing string        // the dependencies' base URLs; "" for the program's own
	healthy, down      time.Duration // the program's own inventory's cycle
	fault              string        // how it fails while down: faultError or faultHang
	rate               float64       // checkouts a second the load generator sends; 0 none
	sheddable          float64       // share of them marked SHEDDABLE, 0 to 1
	seed               uint64
	workers            int           // checkouts doing their own work at once
	work               time.Duration // how long each does it; 0 none

	logger *slog.Logger // the breakers' and the admin's; nil discards
	clock  clock.Clock  // the breakers', the page's and a checkout's work's; nil is the system clock
	proba  *proba.Proba // the breakers' draws; nil is the runtime's generator
}

func defaultConfig() config {
	return config{addr: "127.0.0.1:8080", ops: "127.0.0.1:8081", healthy: 30 * time.Second,
		down: 30 * time.Second, fault: faultError, rate: 20, sheddable: 0.3, seed: 1,
		workers: 4, work: 20 * time.Millisecond}
}

// How the program's own inventory fails while down (-fault).
const (
	faultError = "error" // it answers 503 at once
	faultHang  = "hang"  // it answers nothing until its caller gives up
)

// maxRate bounds -rate: the load generator is there to show the breakers,
// not to load-test the machine.
const maxRate = 10000

// maxWorkers and maxWork bound -workers and -work: a checkout's own work
// stands for a pool and a few milliseconds of CPU or database, not for a
// batch job.
const (
	maxWorkers = 10000
	maxWork    = 10 * time.Second
)

func (c config) validate() error {
	switch {
	case !(c.rate >= 0 && c.rate <= maxRate): // !(…) catches NaN
		return fmt.Errorf("-rate %v: must be between 0 and %d", c.rate, maxRate)
	case !(c.sheddable >= 0 && c.sheddable <= 1):
		return fmt.Errorf("-sheddable %v: must be between 0 and 1", c.sheddable)
	case c.healthy <= 0:
		return fmt.Errorf("-healthy %v: must be positive", c.healthy)
	case c.down < 0:
		return fmt.Errorf("-down %v: must not be negative", c.down)
	case c.fault != faultError && c.fault != faultHang:
		return fmt.Errorf("-fault %q: must be %q or %q", c.fault, faultError, faultHang)
	case c.workers < 1 || c.workers > maxWorkers:
		return fmt.Errorf("-workers %d: must be between 1 and %d", c.workers, maxWorkers)
	case c.work < 0 || c.work > maxWork:
		return fmt.Errorf("-work %v: must be between 0s and %v", c.work, maxWork)
	}
	for flag, u := range map[string]string{"-inventory": c.inventory, "-pricing": c.pricing} {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%s %q: must be an http or https URL with a host", flag, u)
		}
	}
	return nil
}

// service is a running service: its servers and its load generator.
type service struct {
	breakers *breaker.Registry
	client   *http.Client // the dependencies', through the breakers' Transport
	log      *slog.Logger
	clock    clock.Clock

	// A checkout's own work: one of workers, held for work.
	workers chan struct{}
	work    time.Duration

	inventory, pricing string // base URLs
	checkoutURL        string
	metricsURL         string
	statusURL          string
	adminURL           string
	ownInventory       string // what the program's own inventory does, for the banner; "" when not the program's

	servers []*http.Server
	stop    context.CancelFunc
	wg      sync.WaitGroup // the load generator
}

// start validates cfg, serves the public and operations addresses (and the
// program's own dependencies, unless cfg names others) and starts the load
// generator. close stops all of it.
func start(cfg config) (_ *service, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// One registry for every breaker of the program, so that one collector,
	// one page and one admin endpoint see them all. A program that has no
	// need for options of its own could leave them in
	// breaker.DefaultRegistry(), which the Transport and Handler use by
	// default, and configure it with Configure.
	opts := []breaker.Option{breaker.WithLogger(logger)}
	pageOpts := []statuspage.Option{}
	if cfg.proba != nil {
		opts = append(opts, breaker.WithProba(cfg.proba))
	}
	if cfg.clock != nil {
		opts = append(opts, breaker.WithClock(cfg.clock))
		pageOpts = append(pageOpts, statuspage.WithClock(cfg.clock))
	}
	s := &service{breakers: breaker.MustNewRegistry(opts...), log: logger, clock: cfg.clock,
		workers: make(chan struct{}, cfg.workers), work: cfg.work,
		inventory: cfg.inventory, pricing: cfg.pricing}
	if s.clock == nil {
		s.clock = clock.New()
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()

	began := time.Now()
	if s.inventory == "" {
		down := func() bool { return false }
		s.ownInventory = "always up"
		if cfg.down > 0 {
			cycle := cfg.healthy + cfg.down
			down = func() bool { return time.Since(began)%cycle >= cfg.healthy }
			s.ownInventory = fmt.Sprintf("up %v, then down %v, over and over", cfg.healthy, cfg.down)
			if cfg.fault == faultHang {
				s.ownInventory = fmt.Sprintf("up %v, then hanging %v, over and over", cfg.healthy, cfg.down)
			}
		}
		if s.inventory, err = s.serve("127.0.0.1:0", dependency("inventory", "42", down, cfg.fault)); err != nil {
			return nil, err
		}
	}
	if s.pricing == "" {
		if s.pricing, err = s.serve("127.0.0.1:0", dependency("pricing", "9.99", func() bool { return false }, faultError)); err != nil {
			return nil, err
		}
	}

	// The dependencies' breakers: the Transport keeps one per host, named
	// here for the dependency rather than for its address, so that the
	// metrics, the page, the log lines and the alerts say "inventory".
	names := map[string]string{host(s.inventory): inventoryName, host(s.pricing): pricingName}
	transport := httpbreaker.MustNewTransport(nil, httpbreaker.WithRegistry(s.breakers),
		httpbreaker.WithKey(func(r *http.Request) string {
			if name, ok := names[r.URL.Host]; ok {
				return name
			}
			return r.URL.Host
		}))
	s.client = &http.Client{Transport: transport, Timeout: 2 * time.Second}

	public := http.NewServeMux()
	public.Handle("GET /checkout", httpbreaker.MustNewHandler(http.HandlerFunc(s.checkout),
		httpbreaker.WithRegistry(s.breakers),
		httpbreaker.WithKey(func(*http.Request) string { return checkoutKey }),
		// The header is believed up to CRITICAL: no client can claim
		// CRITICAL_PLUS to jump the queue.
		// More checkouts than the handler serves are rejected, SHEDDABLE
		// first, by the Handler's overload limit (docs/guide/overload.md);
		// a checkout waiting on inventory through the Transport holds no
		// room in it, nor is it out for the route's breaker meanwhile: an
		// inventory that hangs is the inventory breaker's to shed.
		httpbreaker.WithCriticalityPolicy(httpbreaker.TrustHeader(criticality.Critical))))
	publicBase, err := s.serve(cfg.addr, public)
	if err != nil {
		return nil, err
	}
	s.checkoutURL = publicBase + "/checkout"

	metrics := prometheus.NewRegistry()
	metrics.MustRegister(prombreaker.MustNewCollector(s.breakers))
	page, err := statuspage.New(s.breakers, pageOpts...)
	if err != nil {
		return nil, err
	}
	ops := http.NewServeMux()
	ops.Handle("GET /metrics", promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}))
	ops.Handle("/status", page)
	ops.Handle("/admin/override", newAdmin(s.breakers, logger))
	opsBase, err := s.serve(cfg.ops, ops)
	if err != nil {
		return nil, err
	}
	s.metricsURL, s.statusURL, s.adminURL = opsBase+"/metrics", opsBase+"/status", opsBase+"/admin/override"

	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	if cfg.rate > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.generate(ctx, cfg.rate, cfg.sheddable, cfg.seed)
		}()
	}
	return s, nil
}

// run starts the service, prints where to look, and serves until ctx is done.
func run(ctx context.Context, cfg config, out io.Writer) error {
	s, err := start(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	s.banner(out)
	<-ctx.Done()
	return nil
}

// banner prints where an operator looks.
func (s *service) banner(out io.Writer) {
	fmt.Fprintf(out, "checkout:  %s\n", s.checkoutURL)
	fmt.Fprintf(out, "metrics:   %s\n", s.metricsURL)
	fmt.Fprintf(out, "status:    %s\n", s.statusURL)
	fmt.Fprintf(out, "admin:     %s (from this machine only)\n", s.adminURL)
	fmt.Fprintf(out, "           curl -X POST '%s?breaker=%s&mode=shed_all&ttl=10m&reason=failover&by=me'\n",
		s.adminURL, inventoryName)
	fmt.Fprintf(out, "           curl -X DELETE '%s?breaker=%s'\n", s.adminURL, inventoryName)
	if s.ownInventory != "" {
		fmt.Fprintf(out, "inventory: %s (%s)\n", s.inventory, s.ownInventory)
	} else {
		fmt.Fprintf(out, "inventory: %s\n", s.inventory)
	}
	fmt.Fprintf(out, "pricing:   %s\n", s.pricing)
}

// serve listens on addr and serves h until close; it returns the base URL.
func (s *service) serve(addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	s.servers = append(s.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// close stops the load generator and the servers.
func (s *service) close() {
	if s.stop != nil {
		s.stop()
	}
	s.wg.Wait()
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
}

// checkout does its own work, then needs the inventory and can do without
// pricing: a failure of the first fails the checkout (502, or 503 when its
// breaker shed the call), one of the second is answered with a stale
// price.
func (s *service) checkout(w http.ResponseWriter, r *http.Request) {
	if !s.doWork(r.Context()) {
		return // the caller has gone: no answer is due
	}
	stock, err := s.get(r.Context(), s.inventory+"/stock")
	if err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, breaker.ErrServiceUnavailable) {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, "inventory unavailable", code)
		return
	}
	price, stale := "", ""
	if price, err = s.get(r.Context(), s.pricing+"/price"); err != nil {
		price, stale = "9.99", " (stale)"
	}
	fmt.Fprintf(w, "in stock: %s, price: %s%s\n", stock, price, stale)
}

// doWork is a checkout's own work, what bounds how many the route serves
// a second: it waits for one of the workers (a pool of connections, of
// CPUs), holds it for s.work, and reports false if ctx ended first. Past
// what the workers serve, checkouts would wait here, every one longer,
// until their callers gave up; the Handler's overload limit keeps that
// wait short and rejects the rest, SHEDDABLE first.
func (s *service) doWork(ctx context.Context) bool {
	if s.work <= 0 {
		return ctx.Err() == nil
	}
	select {
	case s.workers <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer func() { <-s.workers }()
	t := s.clock.Timer(s.work)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// get asks a dependency, through its breaker, and returns its answer.
func (s *service) get(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if err != nil {
		return "", err
	}
	if err := httpbreaker.ResponseError(resp); err != nil {
		return "", err
	}
	return strings.TrimSpace(string(body)), nil
}

// generatorTimeout is how long a generated checkout waits for its answer.
const generatorTimeout = 2 * time.Second

// generate sends rate checkouts a second until ctx is done, a share of
// them marked SHEDDABLE, from a source seeded with seed. It does not wait
// for answers to send more, as the clients of a service do not: past what
// the service serves, the calls pile up until it turns them away or they
// time out. What it has out at once is bounded by what the rate sends in
// a timeout, at which a tick sends nothing.
func (s *service) generate(ctx context.Context, rate, sheddable float64, seed uint64) {
	client := &http.Client{Timeout: generatorTimeout}
	defer client.CloseIdleConnections()
	rnd := rand.New(rand.NewPCG(seed, 0))
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	slots := make(chan struct{}, max(1, int(rate*generatorTimeout.Seconds())))
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		level := ""
		if rnd.Float64() < sheddable {
			level = criticality.Sheddable.String()
		}
		select {
		case slots <- struct{}{}:
		default:
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.checkoutURL, nil)
			if err != nil {
				return
			}
			if level != "" {
				req.Header.Set(httpbreaker.CriticalityHeader, level)
			}
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
}

// dependency serves the program's own stand-in for a dependency: body on
// every path, or, while down says so, what fault says: 503 (faultError),
// or nothing until the caller gives up (faultHang).
func dependency(name, body string, down func() bool, fault string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down() {
			if fault == faultHang {
				<-r.Context().Done()
				return
			}
			http.Error(w, name+" is down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, body)
	})
}

// host is the host (and port) of a base URL, as a request's URL.Host has it.
func host(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Host
}
