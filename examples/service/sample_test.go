package main

import (
	"bytes"
	"context"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/internal/docsample"
)

var update = flag.Bool("update", false, "rewrite the guide's samples from what the code prints")

// The output that docs/guide/production.md shows is the program's: what
// run prints at its defaults, then the log lines of the breakers while
// the inventory fails and checkouts come in, 30 % of them SHEDDABLE, as
// the load generator sends them, up to the inventory's breaker's first
// line. Ports are the defaults' (the program's own dependencies get free
// ones, written here as two fixed numbers) and times are elided.
func TestSample_firstOutage(t *testing.T) {
	cfg := defaultConfig()
	cfg.addr, cfg.ops, cfg.rate = "127.0.0.1:0", "127.0.0.1:0", 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // run prints, then returns at once
	var out bytes.Buffer
	require.NoError(t, run(ctx, cfg, &out))
	// The public and operations addresses, then the program's own
	// inventory and pricing, in the order the banner names them.
	var ports []string
	for _, p := range regexp.MustCompile(`127\.0\.0\.1:[0-9]+`).FindAllString(out.String(), -1) {
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	require.Len(t, ports, 4, out.String())
	banner := strings.NewReplacer(ports[0], "127.0.0.1:8080", ports[1], "127.0.0.1:8081",
		ports[2], "127.0.0.1:40155", ports[3], "127.0.0.1:36417").Replace(out.String())

	f := newFixture(t)
	f.checkouts(20, "")
	f.down.Store(true)
	var lines []string
	for round := 0; round < 20 && !strings.Contains(strings.Join(lines, "\n"), "breaker=inventory"); round++ {
		f.checkouts(6, "SHEDDABLE")
		f.checkouts(14, "")
		f.mock.Add(100 * time.Millisecond)
		lines = strings.Split(strings.TrimSpace(f.logs.String()), "\n")
	}
	for i, l := range lines {
		if strings.Contains(l, "breaker=inventory") {
			lines = lines[:i+1]
			break
		}
	}
	logs := regexp.MustCompile(`time=\S+`).ReplaceAllString(strings.Join(lines, "\n"), "time=…")
	docsample.Check(t, "../../docs/guide/production.md", "service-first-outage", banner+logs, *update)
}
