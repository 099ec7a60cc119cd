// Command picture draws the panels of ops's dashboard from a real
// Prometheus as an SVG, for docs/guide/alerting.md. It builds and runs
// examples/service against an inventory of its own, scraped every second
// by a prometheus (Debian's package; make prometheus installs it) on
// loopback, through about a minute of an outage:
//
//	0 s    healthy
//	10 s   the inventory goes down
//	25 s   an operator sets a shed_all override on the inventory's breaker
//	35 s   the inventory heals; the operator clears the override
//	55 s   the end
//
// then asks Prometheus for each panel's queries over that minute and draws
// them. make dashboard-svg runs it from ops/:
//
//	go run ./cmd/picture -out ../docs/guide/dashboard.svg
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/srebreaker/srebreaker/ops"
	"github.com/srebreaker/srebreaker/ops/internal/picture"
	"github.com/srebreaker/srebreaker/ops/internal/stack"
)

// width is the rate window of the panels' queries, for a scrape every
// second (Grafana's $__rate_interval would be 4 s).
const width = "5s"

func main() {
	out := flag.String("out", "../docs/guide/dashboard.svg", "SVG file to write")
	root := flag.String("root", "..", "the repository's root, where go.work is")
	flag.Parse()
	if err := run(*root, *out); err != nil {
		fmt.Fprintln(os.Stderr, "picture:", err)
		os.Exit(1)
	}
}

func run(root, out string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "srebreaker-picture-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root, err = filepath.Abs(root)
	if err != nil {
		return err
	}
	bin, err := stack.Build(ctx, root, dir)
	if err != nil {
		return err
	}
	inventory := stack.StartInventory()
	defer inventory.Close()
	svc, err := stack.StartService(bin, "-inventory", inventory.URL(), "-rate", "100", "-sheddable", "0.3")
	if err != nil {
		return err
	}
	defer svc.Close()
	rules, err := os.ReadFile(filepath.Join(root, "ops", "alerts.yml"))
	if err != nil {
		return err
	}
	prom, err := stack.StartPrometheus(dir, []stack.Target{{Job: "service", Addr: svc.OpsAddr()}},
		stack.Shorten(rules, "3s", width))
	if err != nil {
		return err
	}
	defer prom.Close()

	start := time.Now()
	at := func(d time.Duration, what string) {
		time.Sleep(time.Until(start.Add(d)))
		fmt.Fprintf(os.Stderr, "%4.0fs  %s\n", d.Seconds(), what)
	}
	var marks []picture.Mark
	mark := func(label string) { marks = append(marks, picture.Mark{T: time.Now(), Label: label}) }

	at(10*time.Second, "the inventory goes down")
	inventory.SetDown(true)
	mark("inventory down")
	at(25*time.Second, "shed_all override on the inventory")
	if err := svc.AdminDo("POST", "breaker=inventory&mode=shed_all&ttl=30m&reason=failover&by=picture"); err != nil {
		return err
	}
	mark("override")
	at(35*time.Second, "the inventory heals, the override is cleared")
	inventory.SetDown(false)
	if err := svc.AdminDo("DELETE", "breaker=inventory"); err != nil {
		return err
	}
	mark("healed")
	at(57*time.Second, "the end") // two more scrapes, for the last points
	end := start.Add(55 * time.Second)

	var panels []picture.Panel
	for _, p := range ops.Panels {
		panel := picture.Panel{Title: p.Title, Unit: p.Unit}
		for _, t := range p.Targets {
			series, err := prom.QueryRange(ctx, stack.Grafana(t.Expr, width), start, end, time.Second)
			if err != nil {
				return err
			}
			if len(series) == 0 {
				return fmt.Errorf("panel %q: no data for %s", p.Title, t.Expr)
			}
			// Prometheus answers in no given order: by legend, for
			// colors that stay put from one run to the next.
			sort.Slice(series, func(i, j int) bool {
				return picture.Legend(t.Legend, series[i].Labels) < picture.Legend(t.Legend, series[j].Labels)
			})
			for _, s := range series {
				line := picture.Series{Legend: picture.Legend(t.Legend, s.Labels)}
				for _, pt := range s.Points {
					line.Points = append(line.Points, picture.Point{T: pt.T, V: pt.V})
				}
				panel.Series = append(panel.Series, line)
			}
		}
		panels = append(panels, panel)
	}
	var buf bytes.Buffer
	title := "srebreaker: examples/service through an outage of its inventory (Prometheus, scraped every second)"
	if err := picture.Draw(&buf, title, panels, marks, start, end); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
