package ops_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/ops"
)

func TestDashboard_fileIsGenerated(t *testing.T) {
	want, err := ops.Dashboard()
	require.NoError(t, err)
	got, err := os.ReadFile("dashboard.json")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "dashboard.json is stale: run go generate in ops")
}

// dashboardFile is what the test reads of dashboard.json: what Grafana
// reads of it.
type dashboardFile struct {
	Panels []struct {
		Title   string `json:"title"`
		GridPos struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) dashboardFile {
	t.Helper()
	b, err := os.ReadFile("dashboard.json")
	require.NoError(t, err)
	var d dashboardFile
	require.NoError(t, json.Unmarshal(b, &d))
	return d
}

func TestDashboard_panelsQueryOnlyPrombreakersMetrics(t *testing.T) {
	// prombreaker's families (its package documentation); the end-to-end
	// test checks that each query returns data from a real scrape.
	exported := map[string]bool{}
	for _, m := range []string{"requests_total", "successes_total", "failures_total", "drops_total",
		"drop_probability", "window_successes", "window_failures", "window_drops", "override",
		"requests_by_criticality_total", "successes_by_criticality_total", "failures_by_criticality_total",
		"drops_by_criticality_total", "drop_probability_by_criticality",
		"overload_limit", "overload_in_flight", "overload_queued", "overloaded", "overload_rejections_total"} {
		exported["srebreaker_"+m] = true
	}
	d := readDashboard(t)
	require.Len(t, d.Panels, len(ops.Panels))
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	assert.Equal(t, []string{"datasource", "job", "breaker"}, vars)

	metric := regexp.MustCompile(`srebreaker_[a-z_]+`)
	seen := map[[2]int]bool{}
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		assert.False(t, seen[[2]int{p.GridPos.X, p.GridPos.Y}], "%s overlaps another panel", p.Title)
		seen[[2]int{p.GridPos.X, p.GridPos.Y}] = true
		for _, target := range p.Targets {
			names := metric.FindAllString(target.Expr, -1)
			require.NotEmpty(t, names, "%s: %s", p.Title, target.Expr)
			for _, n := range names {
				assert.True(t, exported[n], "%s: %s is not a metric prombreaker exports", p.Title, n)
			}
			assert.Contains(t, target.Expr, `job=~"$job"`, p.Title)
			assert.Contains(t, target.Expr, `breaker=~"$breaker"`, p.Title)
		}
	}
	var titles []string
	for _, p := range ops.Panels {
		titles = append(titles, p.Title)
	}
	assert.True(t, sort.SliceIsSorted(d.Panels, func(i, j int) bool {
		return d.Panels[i].GridPos.Y < d.Panels[j].GridPos.Y ||
			d.Panels[i].GridPos.Y == d.Panels[j].GridPos.Y && d.Panels[i].GridPos.X < d.Panels[j].GridPos.X
	}), "panels in reading order: %v", titles)
}
