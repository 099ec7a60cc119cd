package ops_test

import (
	"encoding/json"
	"fmt"

	"github.com/srebreaker/srebreaker/ops"
)

// A program that builds its own dashboards can take the panels' queries
// from Panels, or the whole dashboard, as Grafana imports it, from
// Dashboard.
func ExampleDashboard() {
	b, err := ops.Dashboard()
	if err != nil {
		panic(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		panic(err)
	}
	for _, p := range d.Panels {
		fmt.Printf("%s, queries: %d\n", p.Title, len(p.Targets))
	}
	fmt.Println(d.Panels[0].Targets[0].Expr)
	// Output:
	// Drop probability, queries: 1
	// Share of calls shed, queries: 1
	// Calls by outcome, queries: 3
	// Share shed by criticality, queries: 1
	// Share of admitted calls failing, queries: 1
	// Overrides in force, queries: 1
	// Server overload limit, queries: 3
	// Server rejections by criticality, queries: 1
	// max by (job, breaker) (srebreaker_drop_probability{job=~"$job", breaker=~"$breaker"})
}
