package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAblation_standardScenarioSeed1(t *testing.T) {
	rules, err := parseAblate("down,fleet-probe")
	require.NoError(t, err)
	table, err := ablation([]string{"-rates 2000"}, rules, []uint64{1})
	require.NoError(t, err)

	require.Len(t, table.rows, 3, "a row with no rule off, then one per rule")
	for i, rule := range []string{"", "down", "fleet-probe"} {
		assert.Equal(t, "-rates 2000", table.rows[i].scenario)
		assert.Equal(t, rule, table.rows[i].rule)
		assert.Len(t, table.rows[i].spans, len(ablationFigures))
	}
	// Without trust in a run of failures, the outage is shed on the
	// window alone: more of it reaches the dependency, later.
	base, off := table.rows[0].spans, table.rows[1].spans
	assert.Greater(t, off[0].lo, base[0].hi, "the outage reaching the dependency")
	assert.True(t, table.rows[1].moved[0])
	assert.NotEmpty(t, table.moved["down"])
	// A fleet's rule changes nothing of one breaker.
	for j, f := range ablationFigures {
		assert.Equal(t, base[j].cell(f.digits, f.unit), table.rows[2].spans[j].cell(f.digits, f.unit), f.name)
	}
	assert.Empty(t, table.moved["fleet-probe"])

	var out bytes.Buffer
	table.print(&out, rules)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// The header, 2 lines of table head, 3 rows, a blank line, 2 lines of
	// head and a line per rule.
	require.Len(t, lines, 1+1+2+3+1+2+2, out.String())
	assert.Equal(t, 1+2+len(ablationFigures), strings.Count(lines[2], "|"), "a column per figure")
	assert.Contains(t, lines[5], "| down |")
	assert.Contains(t, lines[5], "**", "a figure moved is in bold")
	assert.Contains(t, lines[len(lines)-1], "| fleet-probe |")
	assert.True(t, strings.HasSuffix(lines[len(lines)-1], "| none |"))
}

func TestParseAblate(t *testing.T) {
	rules, err := parseAblate("down, shift")
	require.NoError(t, err)
	require.Len(t, rules, 2)
	bc := defaultConfig().breakerConfig
	for _, r := range rules {
		r.off(&bc)
	}
	assert.Equal(t, " without down,shift", ablatedLine(bc))
	assert.Equal(t, "", ablatedLine(defaultConfig().breakerConfig))

	_, err = parseAblate("down,nope")
	assert.ErrorContains(t, err, `-ablate down,nope: no rule "nope"; the rules are aggression, counted-drops, read-back`)
}

func TestParseFlags_ablation(t *testing.T) {
	cfg, err := parseFlags([]string{"-ablation", "-seeds", "1-2"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.ablation)
	assert.Equal(t, []uint64{1, 2}, cfg.seeds)

	var stderr bytes.Buffer
	_, err = parseFlags([]string{"-ablation", "-rate", "20"}, &stderr)
	assert.ErrorContains(t, err, "-ablation and -rate")

	stderr.Reset()
	_, err = parseFlags([]string{"-h"}, &stderr)
	require.Error(t, err)
	assert.NotContains(t, stderr.String(), "ablat", "the ablation's flags are hidden")
}
