package ops

import (
	"encoding/json"
	"strings"
)

// Panel is one graph of the dashboard: a title, what it shows, the unit of
// its values (a Grafana unit: "percentunit" for shares from 0 to 1, "reqps"
// for calls a second, "none") and its queries.
type Panel struct {
	Title       string
	Description string
	Unit        string
	Targets     []Target
}

// Target is one PromQL query of a panel and the legend of its series (a
// Grafana legend format: {{label}} stands for a label's value). The query
// may use the dashboard's variables $job and $breaker (regular
// expressions, ".+" for all) and Grafana's $__rate_interval.
type Target struct {
	Expr   string
	Legend string
}

// sel is the selector of metric for the dashboard's job and breaker.
func sel(metric string, more ...string) string {
	return metric + `{` + strings.Join(append([]string{`job=~"$job"`, `breaker=~"$breaker"`}, more...), ", ") + `}`
}

// rate is the per-second rate of a counter, summed by labels.
func rate(by, metric string, more ...string) string {
	return "sum by (" + by + ") (rate(" + sel(metric, more...) + "[$__rate_interval]))"
}

// Panels are the dashboard's panels, in order, two to a row.
var Panels = []Panel{
	{
		Title: "Drop probability",
		Description: "The probability that a call asking each breaker now is dropped: 0 while its dependency is " +
			"healthy (srebreaker_drop_probability).",
		Unit:    "percentunit",
		Targets: []Target{{Expr: "max by (job, breaker) (" + sel("srebreaker_drop_probability") + ")", Legend: "{{breaker}}"}},
	},
	{
		Title: "Share of calls shed",
		Description: "The calls each breaker dropped, over the calls that asked it. SrebreakerSheddingSustained fires " +
			"when it stays above 5% over 5 minutes for 10 minutes.",
		Unit: "percentunit",
		Targets: []Target{{Expr: rate("job, breaker", "srebreaker_drops_total") + " / " +
			rate("job, breaker", "srebreaker_requests_total"), Legend: "{{breaker}}"}},
	},
	{
		Title:       "Calls by outcome",
		Description: "Calls a second that each breaker admitted and that succeeded or failed, and that it dropped.",
		Unit:        "reqps",
		Targets: []Target{
			{Expr: rate("job, breaker", "srebreaker_successes_total"), Legend: "{{breaker}} successes"},
			{Expr: rate("job, breaker", "srebreaker_failures_total"), Legend: "{{breaker}} failures"},
			{Expr: rate("job, breaker", "srebreaker_drops_total"), Legend: "{{breaker}} drops"},
		},
	},
	{
		Title: "Share shed by criticality",
		Description: "The share of each level's calls dropped, for breakers whose calls name a level: SHEDDABLE " +
			"should go first. SrebreakerCriticalShed fires when a quarter of CRITICAL_PLUS or CRITICAL goes.",
		Unit: "percentunit",
		Targets: []Target{{Expr: rate("job, breaker, criticality", "srebreaker_drops_by_criticality_total") + " / " +
			rate("job, breaker, criticality", "srebreaker_requests_by_criticality_total"),
			Legend: "{{breaker}} {{criticality}}"}},
	},
	{
		Title: "Share of admitted calls failing",
		Description: "What each breaker's window holds: the failures among the calls it admitted, which its drop " +
			"probability follows.",
		Unit: "percentunit",
		Targets: []Target{{Expr: "sum by (job, breaker) (" + sel("srebreaker_window_failures") + ") / (sum by (job, breaker) (" +
			sel("srebreaker_window_successes") + ") + sum by (job, breaker) (" + sel("srebreaker_window_failures") + "))",
			Legend: "{{breaker}}"}},
	},
	{
		Title: "Overrides in force",
		Description: "1 while an operator's override holds a breaker, by mode. SrebreakerOverrideLeftInForce fires " +
			"after an hour.",
		Unit:    "none",
		Targets: []Target{{Expr: "max by (job, breaker, mode) (" + sel("srebreaker_override") + ")", Legend: "{{breaker}} {{mode}}"}},
	},
	{
		Title: "Server overload limit",
		Description: "For a server's breaker (httpbreaker's Handler and the other server integrations): how many " +
			"calls its overload limit lets into the handlers at once, as learned from their latency, and the calls " +
			"in them and waiting for room.",
		Unit: "none",
		Targets: []Target{
			{Expr: "max by (job, breaker) (" + sel("srebreaker_overload_limit") + ")", Legend: "{{breaker}} limit"},
			{Expr: "sum by (job, breaker) (" + sel("srebreaker_overload_in_flight") + ")", Legend: "{{breaker}} in flight"},
			{Expr: "sum by (job, breaker) (" + sel("srebreaker_overload_queued") + ")", Legend: "{{breaker}} queued"},
		},
	},
	{
		Title: "Server rejections by criticality",
		Description: "Calls a second a server's overload limit rejected for want of room, by level: SHEDDABLE " +
			"should go first. SrebreakerServerRejectsCritical fires when CRITICAL_PLUS or CRITICAL calls go, " +
			"SrebreakerServerOverloaded when the server stays overloaded.",
		Unit: "reqps",
		Targets: []Target{{Expr: rate("job, breaker, criticality", "srebreaker_overload_rejections_total"),
			Legend: "{{breaker}} {{criticality}}"}},
	},
}

// Dashboard returns the Grafana dashboard of Panels as JSON, for Grafana's
// "Import dashboard": a time series panel each, two to a row, with the
// variables $datasource (a Prometheus data source), $job and $breaker
// (several or all of those that export srebreaker_requests_total).
func Dashboard() ([]byte, error) {
	type object = map[string]any
	datasource := object{"type": "prometheus", "uid": "${datasource}"}
	variable := func(name, query string) object {
		return object{"name": name, "label": name, "type": "query", "datasource": datasource,
			"query": object{"query": query, "refId": name}, "definition": query, "refresh": 2,
			"includeAll": true, "multi": true, "allValue": ".+", "sort": 1,
			"current": object{"text": []string{"All"}, "value": []string{"$__all"}}}
	}
	panels := make([]object, 0, len(Panels))
	for i, p := range Panels {
		targets := make([]object, 0, len(p.Targets))
		for j, t := range p.Targets {
			targets = append(targets, object{"refId": string(rune('A' + j)), "datasource": datasource,
				"expr": t.Expr, "legendFormat": t.Legend, "range": true})
		}
		defaults := object{"unit": p.Unit, "min": 0, "custom": object{"lineWidth": 1, "fillOpacity": 10,
			"showPoints": "never", "spanNulls": false}}
		if p.Unit == "percentunit" {
			defaults["max"] = 1
		}
		panels = append(panels, object{"id": i + 1, "type": "timeseries", "title": p.Title,
			"description": p.Description, "datasource": datasource,
			"gridPos":     object{"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i / 2)},
			"fieldConfig": object{"defaults": defaults, "overrides": []any{}},
			"options": object{"legend": object{"displayMode": "list", "placement": "bottom", "showLegend": true},
				"tooltip": object{"mode": "multi", "sort": "desc"}},
			"targets": targets})
	}
	d := object{
		"title": "srebreaker", "uid": "srebreaker", "description": "Breakers exported by prombreaker (srebreaker).",
		"tags": []string{"srebreaker"}, "editable": true, "schemaVersion": 39, "version": 1,
		"time": object{"from": "now-1h", "to": "now"}, "refresh": "30s",
		"annotations": object{"list": []any{}},
		"templating": object{"list": []any{
			object{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"},
			variable("job", "label_values(srebreaker_requests_total, job)"),
			variable("breaker", `label_values(srebreaker_requests_total{job=~"$job"}, breaker)`),
		}},
		"panels": panels,
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
