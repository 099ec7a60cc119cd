package main

import (
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/internal/docsample"
)

// overloadRate is what TestService_overloadAsAnOperatorSeesIt offers:
// twice what the checkouts' workers serve at the defaults (4 × 20 ms, 200
// a second).
const overloadRate = 400

// TestService_overloadAsAnOperatorSeesIt runs the service as
// docs/guide/production.md has it overloaded, -rate 400 -down 0, in real
// time on loopback: the route's overload limit rejects what its workers
// cannot serve, SHEDDABLE first, logs once that it started, and once that
// it stopped when the load falls; the breakers shed nothing, the
// dependencies being healthy. The guide's sample is its log, figures
// elided.
func TestService_overloadAsAnOperatorSeesIt(t *testing.T) {
	logs := &syncBuffer{}
	cfg := defaultConfig()
	cfg.addr, cfg.ops, cfg.down, cfg.rate = "127.0.0.1:0", "127.0.0.1:0", 0, overloadRate
	cfg.logger = slog.New(slog.NewTextHandler(logs, nil))
	s, err := start(cfg)
	require.NoError(t, err)
	defer s.close()
	f := &fixture{t: t, s: s, logs: logs}

	// The generator sends 400 checkouts a second; the route's limit
	// learns what 4 workers serve, and rejects the rest.
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "started rejecting") },
		20*time.Second, 50*time.Millisecond, "the route's overload limit starts rejecting:\n%s", logs)
	// Then, from there, until 400 more have been answered either way.
	before := f.metrics()
	var m map[string]float64
	name := func(what, level string) string {
		return `srebreaker_` + what + `{breaker="server:GET /checkout",criticality="` + level + `"}`
	}
	by := func(what, level string) float64 { return m[name(what, level)] - before[name(what, level)] }
	require.Eventually(t, func() bool {
		m = f.metrics()
		return by("overload_rejections_total", "SHEDDABLE")+by("overload_rejections_total", "CRITICAL")+
			by("successes_by_criticality_total", "SHEDDABLE")+by("successes_by_criticality_total", "CRITICAL") >= overloadRate
	}, 20*time.Second, 50*time.Millisecond)
	for _, what := range []string{"overload_rejections_total", "successes_by_criticality_total"} {
		for _, level := range []string{"SHEDDABLE", "CRITICAL"} {
			require.Contains(t, m, name(what, level))
		}
	}
	rejectedC, rejectedS := by("overload_rejections_total", "CRITICAL"), by("overload_rejections_total", "SHEDDABLE")
	servedC, servedS := by("successes_by_criticality_total", "CRITICAL"), by("successes_by_criticality_total", "SHEDDABLE")
	t.Logf("CRITICAL served %v, rejected %v; SHEDDABLE served %v, rejected %v", servedC, rejectedC, servedS, rejectedS)
	assert.Greater(t, rejectedC+rejectedS, 0.0, "the limit rejects the excess")
	assert.Greater(t, servedC+servedS, 0.0)
	assert.Less(t, servedS/(servedS+rejectedS), servedC/(servedC+rejectedC), "SHEDDABLE is served less than CRITICAL")
	assert.True(t, m[`srebreaker_overloaded{breaker="server:GET /checkout"}`] == 1 ||
		m[`srebreaker_overload_queue_held{breaker="server:GET /checkout"}`] == 1, "overloaded, or its queue held short")
	assert.Zero(t, m[`srebreaker_drops_total{breaker="server:GET /checkout"}`], "the route's breaker sheds nothing")
	assert.Zero(t, m[`srebreaker_drops_total{breaker="inventory"}`], "nor does the inventory's")

	// The load falls to a checkout every 100 ms: the limit stops
	// rejecting, and says so once, with what it rejected by level.
	s.stop()
	s.wg.Wait()
	require.Eventually(t, func() bool {
		f.checkouts(1, "")
		return strings.Contains(logs.String(), "stopped rejecting")
	}, 10*time.Second, 100*time.Millisecond, "the limit stops rejecting once the load falls:\n%s", logs)

	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "started rejecting"), out)
	assert.Equal(t, 1, strings.Count(out, "stopped rejecting"), out)
	assert.NotContains(t, out, "shedding", "no breaker sheds: the dependencies are healthy")
	// The guide's sample: the two lines, times and figures elided.
	figures := regexp.MustCompile(`(time|limit|in_flight|queued|overloaded|queue_held|rejected|for)=[^ \n]+`)
	sample := figures.ReplaceAllString(strings.TrimSpace(out), "$1=…")
	sample = regexp.MustCompile(`([A-Z_]+)=[0-9]+`).ReplaceAllString(sample, "$1=…")
	docsample.Check(t, "../../docs/guide/production.md", "service-overload", sample, *update)
}
