// Command service is a small HTTP service set up as one would run it in
// production: every breaker it uses is in one [breaker.Registry], which
// logs through log/slog ([breaker.WithLogger]), is exported to Prometheus
// ([prombreaker.Collector]), is shown on a status page ([statuspage.Page]),
// and can be overridden by an operator from an admin endpoint.
//
// It serves GET /checkout on its public address (-addr). A checkout does
// its own work first, holding one of -workers for -work (200 checkouts a
// second at the defaults), then asks two dependencies over HTTP through
// one [httpbreaker.Transport], which keeps a breaker per host:
// "inventory", which a checkout needs (when it fails or is shed, the
// checkout fails with 502 or 503), and "pricing", which it can do without
// (when it fails, the checkout answers with a price marked stale). The
// route is guarded by an [httpbreaker.Handler] (breaker "server:GET
// /checkout"), which trusts the criticality a request names in its
// X-Request-Criticality header up to CRITICAL. A checkout that fails for
// the inventory counts as neither on the route's breaker, and its answer
// carries the advice that makes its callers' breakers count it as neither
// too: while the inventory is down, the inventory's breaker alone
// sheds, and the log, the metrics and the alerts name it alone. More
// checkouts than the workers serve are rejected by the Handler's overload
// limit, SHEDDABLE first, with 503 and the header that tells its callers'
// breakers to throttle (-rate 400 is twice what the defaults serve).
//
// Its operations address (-ops) serves what an operator reads and does:
//
//	/metrics          the breakers' metrics, for Prometheus to scrape
//	/status           the status page (?format=json for its data)
//	/admin/override   GET lists the overrides in force; POST sets one:
//	                  ?breaker=NAME&mode=shed_all|shed_none&ttl=30m&reason=...&by=...
//	                  DELETE ?breaker=NAME clears it
//
// The admin endpoint answers only requests from a loopback address that a
// browser did not send from another site, so that only an admin on the
// machine itself can set an override: keep -ops on a loopback or private
// address in production as well, behind whatever authentication the
// platform puts in front of operations endpoints.
//
// By default both dependencies are servers of the program's own on
// loopback, and inventory goes down on a schedule (-healthy, then -down,
// then healthy again, over and over), failing at once or hanging
// (-fault), while a load generator in the
// program sends -rate checkouts a second, a -sheddable share of them
// marked SHEDDABLE, so that the breakers, the metrics, the page and the
// log have something to show. -inventory and -pricing point the service at
// real dependencies instead; -rate 0 turns the load generator off.
//
//	go run ./examples/service
//	cd examples/service && go run . -addr 127.0.0.1:8080 -ops 127.0.0.1:8081 -healthy 1m -down 2m
//
// Flags:
//
//	-addr       public address, /checkout (default 127.0.0.1:8080; port 0 picks one)
//	-ops        operations address: /metrics, /status, /admin/override (default 127.0.0.1:8081)
//	-inventory  base URL of the inventory dependency (default: one served by the program)
//	-pricing    base URL of the pricing dependency (default: one served by the program)
//	-healthy    how long the program's own inventory stays up in each cycle (default 30s)
//	-down       how long it then fails (default 30s; 0 never)
//	-fault      how it fails while down: error, 503 at once, or hang, no answer until its caller gives up (default error)
//	-rate       checkouts a second the load generator sends (default 20; 0 none)
//	-sheddable  share of those marked SHEDDABLE (default 0.3)
//	-seed       seed of the load generator's choice of levels (default 1)
//	-workers    checkouts that do their own work at once (default 4)
//	-work       how long a checkout's own work takes, holding one of them (default 20ms; 0 none)
//
// It prints where to look, then logs the breakers' events (shedding
// started and stopped, overrides set, cleared and expired, the route's
// overload limit starting and stopping to reject calls) and the admin's
// requests as text lines on standard error, until interrupted. docs/guide/production.md
// walks through it, with the alerts and the dashboard of ops/. It is a
// module of its own, because it needs the Prometheus client.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg := defaultConfig()
	setFlags(flag.CommandLine, &cfg)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "service:", err)
		os.Exit(1)
	}
}

// setFlags defines the command's flags on fs, into cfg.
func setFlags(fs *flag.FlagSet, cfg *config) {
	fs.StringVar(&cfg.addr, "addr", cfg.addr, "public address, /checkout (port 0 picks one)")
	fs.StringVar(&cfg.ops, "ops", cfg.ops, "operations address: /metrics, /status, /admin/override")
	fs.StringVar(&cfg.inventory, "inventory", "", "base URL of the inventory dependency (default: one served by the program)")
	fs.StringVar(&cfg.pricing, "pricing", "", "base URL of the pricing dependency (default: one served by the program)")
	fs.DurationVar(&cfg.healthy, "healthy", cfg.healthy, "how long the program's own inventory stays up in each cycle")
	fs.DurationVar(&cfg.down, "down", cfg.down, "how long the program's own inventory then fails (0: never)")
	fs.StringVar(&cfg.fault, "fault", cfg.fault, `how the program's own inventory fails: "error" (503 at once) or "hang" (no answer)`)
	fs.Float64Var(&cfg.rate, "rate", cfg.rate, "checkouts a second the load generator sends (0: none)")
	fs.Float64Var(&cfg.sheddable, "sheddable", cfg.sheddable, "share of the generated checkouts marked SHEDDABLE")
	fs.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the load generator's choice of levels")
	fs.IntVar(&cfg.workers, "workers", cfg.workers, "checkouts that do their own work at once")
	fs.DurationVar(&cfg.work, "work", cfg.work, "how long a checkout's own work takes (0: none)")
}
