package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// svgNode is any SVG element, parsed generically.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []svgNode  `xml:",any"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// walk calls f on n and every element below it.
func (n svgNode) walk(f func(svgNode)) {
	f(n)
	for _, c := range n.Nodes {
		c.walk(f)
	}
}

func parseSVG(t *testing.T, data []byte) svgNode {
	t.Helper()
	var root svgNode
	require.NoError(t, xml.Unmarshal(data, &root), "the chart is well-formed XML")
	require.Equal(t, "svg", root.XMLName.Local)
	return root
}

// pathPoints returns the points of a path's d attribute, which the chart
// writes as "M x y L x y ...".
func pathPoints(t *testing.T, d string) [][2]float64 {
	t.Helper()
	var points [][2]float64
	fields := strings.Fields(d)
	require.Zero(t, len(fields)%2, "x y pairs: %q", d)
	for i := 0; i < len(fields); i += 2 {
		cmd, xs := fields[i][:1], fields[i][1:]
		require.Contains(t, []string{"M", "L"}, cmd)
		x, err := strconv.ParseFloat(xs, 64)
		require.NoError(t, err)
		y, err := strconv.ParseFloat(fields[i+1], 64)
		require.NoError(t, err)
		points = append(points, [2]float64{x, y})
	}
	return points
}

func simulationSVG(t *testing.T, cfg config) []byte {
	t.Helper()
	res, err := simulate(cfg)
	require.NoError(t, err)
	var buf bytes.Buffer
	writeSVG(&buf, simulationChart(cfg, res))
	return buf.Bytes()
}

func TestWriteSVG_seriesWithinTheViewBox(t *testing.T) {
	root := parseSVG(t, simulationSVG(t, defaultConfig()))
	assert.Equal(t, "0 0 960 534", root.attr("viewBox"), "the title takes three lines")

	paths := map[string][][2]float64{}
	var phases, labels []string
	var texts string
	root.walk(func(n svgNode) {
		switch {
		case n.XMLName.Local == "path" && n.attr("class") == "series":
			paths[n.attr("id")] = pathPoints(t, n.attr("d"))
		case n.XMLName.Local == "rect" && n.attr("class") == "phase":
			phases = append(phases, n.attr("x"))
		case n.XMLName.Local == "text" && n.attr("class") == "phase-label":
			labels = append(labels, n.Text)
		case n.XMLName.Local == "text":
			texts += n.Text + "\n"
		}
	})
	for _, id := range []string{"offered", "admitted", "succeeded", "drop-probability"} {
		points := paths[id]
		require.NotEmpty(t, points, "series %s", id)
		for _, p := range points {
			require.True(t, p[0] >= plotLeft && p[0] <= plotRight && p[1] >= plotTop && p[1] <= plotBottom,
				"series %s: point %v outside the plot area", id, p)
		}
	}
	assert.Len(t, paths["offered"], 350, "35 s in 100 ms bins")
	assert.Equal(t, []string{"healthy", "outage", "healed", "overload"}, labels)
	assert.Len(t, phases, 4)
	assert.Contains(t, texts, "srebreaker simulation:\nK=1.5 protection=5 window=2s buckets=20 aggression=1.5 drops counted=true trust recent=true\n")
	assert.Contains(t, texts, "2000 requests/s offered; seed 1")
	assert.Contains(t, texts, "time since the start")
	assert.Contains(t, texts, "drop probability (right axis)")

	// While healthy nothing is dropped (the line sits on the axis), and at
	// the worst of the outage nearly everything is.
	drop := paths["drop-probability"]
	assert.Equal(t, float64(plotBottom), drop[0][1])
	top := float64(plotBottom)
	for _, p := range drop {
		top = min(top, p[1])
	}
	assert.Less(t, top, float64(plotTop)+0.1*(plotBottom-plotTop))
}

func TestWriteSVG_longRunIsBinnedPerSecond(t *testing.T) {
	cfg := defaultConfig()
	cfg.rate = 20
	cfg.phases[overload].length = 95 * time.Second // 2 minutes in all
	root := parseSVG(t, simulationSVG(t, cfg))
	found := false
	root.walk(func(n svgNode) {
		if n.attr("id") == "offered" {
			found = true
			assert.Len(t, pathPoints(t, n.attr("d")), 120)
		}
	})
	assert.True(t, found)

	tl := &timeline{}
	for s := range 3000 { // 50 minutes, a call a second
		tl.add(time.Duration(s)*time.Second, counts{offered: 1, allowed: 1})
	}
	width, bins := chart{length: 3000 * time.Second, tl: tl}.bins()
	assert.Equal(t, 5*time.Second, width)
	assert.Len(t, bins, 600)
	assert.Equal(t, 5, bins[0].offered)
}

func TestWriteSVG_escapesText(t *testing.T) {
	tl := &timeline{}
	tl.add(0, counts{offered: 1})
	var buf bytes.Buffer
	writeSVG(&buf, chart{title: `a <b> & "c"`, subtitle: "x", length: time.Second, tl: tl,
		bands: []band{{name: "<&>", from: 0, to: time.Second}}})
	root := parseSVG(t, buf.Bytes())
	var texts []string
	root.walk(func(n svgNode) {
		if n.XMLName.Local == "text" || n.XMLName.Local == "title" {
			texts = append(texts, n.Text)
		}
	})
	assert.Contains(t, texts, `a <b> & "c"`)
	assert.Contains(t, texts, "<&>")
}

// headerLines returns the text lines above the plot, the svg element's own
// text children, each with its estimated width, and the last one's
// baseline.
func headerLines(t *testing.T, root svgNode) (lines []string, widths []float64, lastBaseline float64) {
	t.Helper()
	for _, n := range root.Nodes {
		if n.XMLName.Local != "text" {
			continue
		}
		y, err := strconv.ParseFloat(n.attr("y"), 64)
		require.NoError(t, err)
		size := float64(fontSize)
		if fs := n.attr("font-size"); fs != "" {
			size, err = strconv.ParseFloat(fs, 64)
			require.NoError(t, err)
		}
		lines = append(lines, n.Text)
		widths = append(widths, textWidth(n.Text, size, n.attr("font-weight") == "bold"))
		lastBaseline = max(lastBaseline, y)
	}
	return lines, widths, lastBaseline
}

func TestWriteSVG_headerFitsTheCanvas(t *testing.T) {
	res, err := simulate(defaultConfig())
	require.NoError(t, err)
	long := simulationChart(defaultConfig(), res)
	long.title = "srebreaker simulation: K=1.2345 protection=12 window=1m30s buckets=45 aggression=2.75 drops counted=true trust recent=true"
	long.subtitle = "scenario /tmp/a-rather-long-directory-name-for-scenarios/slow-brownout-with-a-long-name.json: 6 phases over 2m0s; seed 1"
	huge := long
	huge.title = strings.Repeat("a very long title ", 60)
	huge.subtitle = strings.Repeat("/a-path-without-spaces", 30)

	for _, tc := range []struct {
		name  string
		c     chart
		lines []string // the header's lines, if given
	}{
		{"default", simulationChart(defaultConfig(), res), []string{
			"srebreaker simulation:",
			"K=1.5 protection=5 window=2s buckets=20 aggression=1.5 drops counted=true trust recent=true",
			"evidence=40",
			"2000 requests/s offered; seed 1"}},
		{"long options and path", long, nil},
		{"longer than the header holds", huge, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			writeSVG(&buf, tc.c)
			root := parseSVG(t, buf.Bytes())
			lines, widths, baseline := headerLines(t, root)
			require.NotEmpty(t, lines)
			for i, line := range lines {
				assert.LessOrEqual(t, plotLeft+widths[i], float64(chartWidth), "line %q runs off the canvas", line)
			}
			if tc.lines != nil {
				assert.Equal(t, tc.lines, lines)
			}
			if !strings.Contains(strings.Join(lines, ""), "…") {
				assert.Equal(t, tc.c.title+" "+tc.c.subtitle, strings.Join(lines, " "), "nothing is left out")
			}
			var height float64
			_, err := fmt.Sscanf(root.attr("viewBox"), "0 0 960 %g", &height)
			require.NoError(t, err)
			offset := height - chartHeight // how far the plot moved down
			assert.Less(t, baseline+8, plotTop+offset, "the header clears the plot")
		})
	}
}

func TestWrapText(t *testing.T) {
	const width = 200
	for _, tc := range []struct {
		name, s string
		want    []string
	}{
		{"fits", "short title: K=2", []string{"short title: K=2"}},
		{"breaks after the colon", "srebreaker simulation: K=1.5 window=2s",
			[]string{"srebreaker simulation:", "K=1.5 window=2s"}},
		{"breaks at spaces", "one two three four five six seven eight nine ten eleven",
			[]string{"one two three four five six", "seven eight nine ten eleven"}},
		{"cuts a long word", "scenario /a/long/path/to/a/scenario/file/brownout.json: 6 phases",
			[]string{"scenario", "/a/long/path/to/a/scenario/f…", "6 phases"}},
		{"cuts the last line", strings.Repeat("word ", 40),
			[]string{"word word word word word", "word word word word word", "word word word word word…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wrapText(tc.s, 12, false, width, 3)
			assert.Equal(t, tc.want, got)
			for _, line := range got {
				assert.LessOrEqual(t, textWidth(line, 12, false), float64(width), "line %q", line)
			}
		})
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want float64
		div  int
	}{{1, 1, 5}, {1.1, 2, 4}, {2200, 2500, 5}, {3300, 5000, 5}, {0.07, 0.1, 5}, {1000, 1000, 5}} {
		got, div := niceCeil(tc.v)
		assert.InDelta(t, tc.want, got, 1e-9, "niceCeil(%v)", tc.v)
		assert.Equal(t, tc.div, div)
	}
}

func TestFormatTick(t *testing.T) {
	assert.Equal(t, "500ms", formatTick(500*time.Millisecond))
	assert.Equal(t, "10s", formatTick(10*time.Second))
	assert.Equal(t, "1m30s", formatTick(90*time.Second))
	assert.Equal(t, "2m", formatTick(2*time.Minute))
	assert.Equal(t, "2h", formatTick(2*time.Hour))
	assert.Equal(t, "1h30m", formatTick(90*time.Minute))
}
