// Package picture draws a dashboard's panels as an SVG from the series a
// Prometheus returned for their queries, the way Grafana would show them:
// a grid of time series panels, two to a row, each with its title, its
// legend, a value axis in the panel's unit and marks of moments in time.
package picture

import (
	"fmt"
	"html"
	"io"
	"math"
	"regexp"
	"strings"
	"time"
)

// Panel is one panel to draw.
type Panel struct {
	Title  string
	Unit   string // "percentunit" (0 to 1, shown as %), "reqps" or "none"
	Series []Series
}

// Series is one line of a panel: its legend and its points.
type Series struct {
	Legend string
	Points []Point
}

// Point is a value at a time.
type Point struct {
	T time.Time
	V float64
}

// Mark is a moment drawn as a dashed line across every panel, with a label.
type Mark struct {
	T     time.Time
	Label string
}

// Layout of the picture, in SVG user units.
const (
	width       = 1280
	columns     = 2
	panelW      = width / columns
	panelH      = 290
	headerH     = 36
	plotLeft    = 52 // room for the value axis's labels
	plotRight   = 16
	plotTop     = 30
	legendLineH = 13
	legendRows  = 6
	plotBottom  = 24 + legendRows*legendLineH // the time axis's labels, then the legend
)

// palette holds the series' colors, as Grafana's classic palette goes.
var palette = []string{"#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0",
	"#508642", "#cca300", "#447ebc", "#c15c17"}

// Draw writes the SVG of panels, from start to end, with title above them.
func Draw(w io.Writer, title string, panels []Panel, marks []Mark, start, end time.Time) error {
	if !end.After(start) {
		return fmt.Errorf("picture: end %v is not after start %v", end, start)
	}
	rows := (len(panels) + columns - 1) / columns
	height := headerH + rows*panelH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="12" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, p := range panels {
		x0 := float64((i % columns) * panelW)
		y0 := float64(headerH + (i/columns)*panelH)
		drawPanel(&b, p, marks, start, end, x0, y0)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func drawPanel(b *strings.Builder, p Panel, marks []Mark, start, end time.Time, x0, y0 float64) {
	fmt.Fprintf(b, `<g><rect x="%.0f" y="%.0f" width="%d" height="%d" fill="#fafafa" stroke="#d8d9da"/>`+"\n",
		x0+4, y0+2, panelW-8, panelH-6)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="13" font-weight="bold">%s</text>`+"\n", x0+14, y0+20, html.EscapeString(p.Title))

	left, right := x0+plotLeft, x0+panelW-plotRight
	top, bottom := y0+plotTop, y0+panelH-plotBottom
	top1 := axisMax(p)
	x := func(t time.Time) float64 {
		return left + (right-left)*t.Sub(start).Seconds()/end.Sub(start).Seconds()
	}
	y := func(v float64) float64 { return bottom - (bottom-top)*math.Min(v, top1)/top1 }

	// The value axis: 0, half and the top, with grid lines.
	for _, v := range []float64{0, top1 / 2, top1} {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", left, y(v), right, y(v))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", left-4, y(v)+4, label(v, p.Unit))
	}
	// The time axis: seconds from the start, every 10 s.
	for s := 0.0; s <= end.Sub(start).Seconds(); s += 10 {
		t := start.Add(time.Duration(s * float64(time.Second)))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%.0fs</text>`+"\n", x(t), bottom+14, s)
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", left, bottom, right, bottom)

	for _, m := range marks {
		if m.T.Before(start) || m.T.After(end) {
			continue
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="4,3"/>`+"\n",
			x(m.T), top, x(m.T), bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#666" font-size="10">%s</text>`+"\n", x(m.T)+3, top+10, html.EscapeString(m.Label))
	}

	// The legend's columns are as wide as its longest entry.
	colW := 0.0
	for _, s := range p.Series {
		colW = math.Max(colW, float64(len(s.Legend))*5.6+24)
	}
	for i, s := range p.Series {
		color := palette[i%len(palette)]
		// A gap in the series (no sample for more than 2 s) breaks the line.
		var path strings.Builder
		var last time.Time
		for _, pt := range s.Points {
			if math.IsNaN(pt.V) || math.IsInf(pt.V, 0) {
				last = time.Time{}
				continue
			}
			cmd := "L"
			if last.IsZero() || pt.T.Sub(last) > 2*time.Second {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f,%.1f ", cmd, x(pt.T), y(pt.V))
			last = pt.T
		}
		if path.Len() > 0 {
			fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.TrimSpace(path.String()), color)
		}
		// The legend, in columns under the plot.
		col, row := i/legendRows, i%legendRows
		lx, ly := left+float64(col)*colW, bottom+28+float64(row)*legendLineH
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="10" height="3" fill="%s"/>`, lx, ly-4, color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10">%s</text>`+"\n", lx+14, ly, html.EscapeString(s.Legend))
	}
	b.WriteString("</g>\n")
}

// axisMax is the top of a panel's value axis: 1 for shares, otherwise the
// largest value rounded up to 1, 2 or 5 times a power of ten.
func axisMax(p Panel) float64 {
	if p.Unit == "percentunit" {
		return 1
	}
	top := 0.0
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if !math.IsNaN(pt.V) && !math.IsInf(pt.V, 0) {
				top = math.Max(top, pt.V)
			}
		}
	}
	if top <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(top)))
	for _, m := range []float64{1, 2, 5, 10} {
		if top <= m*exp {
			return m * exp
		}
	}
	return 10 * exp
}

// label writes a value in a panel's unit.
func label(v float64, unit string) string {
	switch unit {
	case "percentunit":
		return fmt.Sprintf("%.0f%%", v*100)
	case "reqps":
		return fmt.Sprintf("%g/s", v)
	}
	return fmt.Sprintf("%g", v)
}

var legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// Legend expands a Grafana legend format with a series' labels.
func Legend(format string, labels map[string]string) string {
	return legendLabel.ReplaceAllStringFunc(format, func(m string) string {
		return labels[legendLabel.FindStringSubmatch(m)[1]]
	})
}
