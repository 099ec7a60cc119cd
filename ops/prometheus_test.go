package ops_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/ops"
	"github.com/srebreaker/srebreaker/ops/internal/stack"
)

// The copy of alerts.yml that the end-to-end test loads waits 3 s where
// the shipped file waits minutes (for:), and rates over 5 s where it
// rates over 5 minutes: Prometheus evaluates on the wall clock, and the
// test cannot wait for production's durations. It scrapes and evaluates
// every second.
const (
	testFor   = "3s"
	testWidth = "5s"
)

// grafana stands in for Grafana's expansion of a panel's query: every
// breaker of every job, and the test's rate width.
func grafana(expr string) string { return stack.Grafana(expr, testWidth) }

// firing lists the firing alerts as "name{label=value,...}" with the
// labels that tell them apart, sorted.
func firing(alerts []stack.Alert) []string {
	var out []string
	for _, a := range alerts {
		if a.State != "firing" {
			continue
		}
		var labels []string
		for _, l := range []string{"breaker", "criticality", "mode"} {
			if v, ok := a.Labels[l]; ok {
				labels = append(labels, l+"="+v)
			}
		}
		out = append(out, a.Labels["alertname"]+"{"+strings.Join(labels, ",")+"}")
	}
	sort.Strings(out)
	return out
}

// waitFor polls cond every 250 ms until it holds or the deadline passes,
// and fails the test with what cond said last.
func waitFor(t *testing.T, deadline time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	end := start.Add(deadline)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		ok, state := cond()
		if ok {
			t.Logf("%s after %v", what, time.Since(start).Truncate(time.Millisecond))
			return
		}
		last = state
		if time.Now().After(end) {
			require.FailNow(t, "timed out: "+what, "after %v: %s", deadline, last)
		}
		<-tick.C
	}
}

// TestPrometheus_outageFiresAndResolves runs examples/service against an
// inventory that goes down and heals, and a Redis watched by the Redis
// exporter that goes down and comes back, all scraped by a real
// Prometheus that evaluates alerts.yml (shortened): every alert fires
// during the outage and resolves after it, and every panel of the
// dashboard has data. The two alerts on a server's overload limit are not
// among them: the service's outage is a dependency's, no overload of its
// own, and alerts_test.yml tests them.
func TestPrometheus_outageFiresAndResolves(t *testing.T) {
	for _, p := range []string{"prometheus", "prometheus-redis-exporter"} {
		if _, err := stack.LookPath(p); err != nil {
			t.Fatal(err) // never skipped: make test installs them
		}
	}
	ctx := context.Background()
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bin, err := stack.Build(ctx, root, dir)
	require.NoError(t, err)

	inventory := stack.StartInventory()
	t.Cleanup(inventory.Close)
	svc, err := stack.StartService(bin, "-inventory", inventory.URL(), "-rate", "100", "-sheddable", "0.3")
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	// The fleet's Redis, watched by the Redis exporter.
	redis, err := stack.StartRedis(dir)
	require.NoError(t, err)
	t.Cleanup(redis.Stop)
	exporter, err := stack.StartExporter(redis.Addr())
	require.NoError(t, err)
	t.Cleanup(exporter.Close)

	rules, err := os.ReadFile("alerts.yml")
	require.NoError(t, err)
	prom, err := stack.StartPrometheus(dir, []stack.Target{{Job: "service", Addr: svc.OpsAddr()}, {Job: "redis", Addr: exporter.Addr()}},
		stack.Shorten(rules, testFor, testWidth))
	require.NoError(t, err)
	t.Cleanup(prom.Close)
	begin := time.Now()
	t.Cleanup(func() { t.Logf("Prometheus and the service ran %v", time.Since(begin).Truncate(time.Second)) })

	alerts := func() []string {
		a, err := prom.Alerts(ctx)
		require.NoError(t, err)
		return firing(a)
	}
	has := func(want ...string) func() (bool, string) {
		return func() (bool, string) {
			got := alerts()
			for _, w := range want {
				if !contains(got, w) {
					return false, fmt.Sprintf("firing: %v", got)
				}
			}
			return true, ""
		}
	}

	waitFor(t, 15*time.Second, "the service and the Redis exporter scraped", func() (bool, string) {
		s, err := prom.Query(ctx, `srebreaker_successes_total{job="service",breaker="inventory"} > 0 or redis_up{job="redis"} == 1`)
		require.NoError(t, err)
		return len(s) == 2, fmt.Sprintf("series: %v", s)
	})
	assert.Empty(t, alerts(), "healthy: nothing fires")

	// The inventory goes down: the inventory's breaker sheds, CRITICAL
	// calls too; the route's, whose checkouts fail for the inventory,
	// counts them as neither and sheds nothing. The fleet's Redis goes at
	// the same time.
	inventory.SetDown(true)
	redis.Stop()
	waitFor(t, 20*time.Second, "shedding and Redis alerts fire", has(
		"SrebreakerSheddingSustained{breaker=inventory}",
		"SrebreakerCriticalShed{breaker=inventory,criticality=CRITICAL}",
		"SrebreakerFleetRedisDown{}"))
	assert.NotContains(t, alerts(), "SrebreakerSheddingSustained{breaker=server:GET /checkout}",
		"the alerts name the dependency that is down, not the route")
	assert.Contains(t, svc.Logs(), `level=WARN msg="breaker started shedding" breaker=inventory`)
	assert.NotContains(t, svc.Logs(), `breaker="server:GET /checkout"`, "the log names the inventory alone")

	// An operator holds the inventory's breaker open, so that every
	// checkout reaches the inventory: the override alerts fire (an hour
	// in production), the one for failures behind them too.
	require.NoError(t, svc.AdminDo("POST", "breaker=inventory&mode=shed_none&ttl=1h&reason=test&by=ops_test"))
	waitFor(t, 20*time.Second, "override alerts fire", has(
		"SrebreakerOverrideLeftInForce{breaker=inventory,mode=shed_none}",
		"SrebreakerOverrideHidesFailures{breaker=inventory}"))

	for _, a := range alerts() {
		assert.False(t, strings.HasPrefix(a, "SrebreakerServer"),
			"%s: the outage is the inventory's, no overload of the service", a)
	}

	// Every panel of the dashboard has data now, the override's included.
	d := readDashboard(t)
	require.Len(t, d.Panels, len(ops.Panels))
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			s, err := prom.Query(ctx, grafana(target.Expr))
			require.NoError(t, err, "%s %s", p.Title, target.RefID)
			assert.NotEmpty(t, s, "panel %q, query %s: no data: %s", p.Title, target.RefID, grafana(target.Expr))
		}
	}

	// The operator lets go and the inventory heals: everything resolves.
	require.NoError(t, svc.AdminDo("DELETE", "breaker=inventory"))
	inventory.SetDown(false)
	require.NoError(t, redis.Start())
	waitFor(t, 30*time.Second, "every alert resolved", func() (bool, string) {
		a, err := prom.Alerts(ctx)
		require.NoError(t, err)
		return len(a) == 0, fmt.Sprintf("pending or firing: %v", a)
	})
	// A breaker says it stopped shedding after a whole window (2 s)
	// without a drop.
	waitFor(t, 15*time.Second, "the log says shedding stopped", func() (bool, string) {
		return strings.Contains(svc.Logs(), `level=INFO msg="breaker stopped shedding" breaker=inventory`), svc.Logs()
	})
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
