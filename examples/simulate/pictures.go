package main

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
)

// The pictures docs/ shows beside the simulator's own chart, each drawn by
// code from runs of the real packages: pictures_test.go compares each with
// the file under docs/pictures, and rewrites them with -update (make
// pictures).
var pictures = []struct {
	file string // under docs/pictures
	draw func(w io.Writer)
}{
	{"drop-curve.svg", drawDropCurve},
	{"fleet.svg", drawFleet},
	{"retries-outage.svg", drawRetryOutage},
}

// drawPicture returns the SVG document draw writes.
func drawPicture(draw func(w io.Writer)) []byte {
	var buf bytes.Buffer
	draw(&buf)
	return buf.Bytes()
}

// lineChart is a chart of lines over a numeric x axis, in the style of the
// simulator's chart (writeSVG): same canvas, fonts, grid and legend.
type lineChart struct {
	title, subtitle string
	xLabel, yLabel  string
	xMax, yMax      float64 // the axes run from 0
	xDivisions      int
	yDivisions      int
	xTick, yTick    func(v float64) string
	bands           []numBand  // shaded behind the lines
	marks           []vMark    // vertical lines across the plot
	lines           []plotLine // in drawing order
	notes           []note     // text inside the plot
}

// numBand is a labelled stretch of the x axis.
type numBand struct {
	name     string
	from, to float64
}

// vMark is a dashed vertical line at x with a label at its top.
type vMark struct {
	x     float64
	label string
	style string
}

// plotLine is one series: points (x, y), NaN y for a gap.
type plotLine struct {
	id, label, style string
	xs, ys           []float64
}

// note is a line of text at (x, y) in the data's coordinates.
type note struct {
	x, y   float64
	text   string
	anchor string // start, middle or end
	fill   string
}

// writeLineChart writes c as a self-contained SVG document.
func writeLineChart(w io.Writer, c lineChart) {
	x := func(v float64) float64 { return plotLeft + (plotRight-plotLeft)*v/c.xMax }
	y := func(v float64) float64 { return plotBottom - (plotBottom-plotTop)*v/c.yMax }
	titleLines := wrapText(c.title, titleSize, true, headerRight-plotLeft, maxHeaderLines)
	subtitleLines := wrapText(c.subtitle, fontSize, false, headerRight-plotLeft, maxHeaderLines)
	shift := titleLeading*(len(titleLines)-1) + subtitleLeading*(len(subtitleLines)-1)
	legendRows := (len(c.lines) + 2) / 3
	height := chartHeight + shift + 20*(legendRows-1)

	p := &svgWriter{w: w}
	p.printf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="%d">`+"\n",
		chartWidth, height, chartWidth, height, fontSize)
	p.printf("<title>%s</title>\n", esc(c.title))
	p.printf("<desc>%s</desc>\n", esc(c.subtitle))
	p.printf(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, height)
	ty := 26
	for i, line := range titleLines {
		if i > 0 {
			ty += titleLeading
		}
		p.printf(`<text class="title" x="%d" y="%d" font-size="%d" font-weight="bold">%s</text>`+"\n", plotLeft, ty, titleSize, esc(line))
	}
	ty += 20
	for _, line := range subtitleLines {
		p.printf(`<text class="subtitle" x="%d" y="%d">%s</text>`+"\n", plotLeft, ty, esc(line))
		ty += subtitleLeading
	}
	p.printf(`<g transform="translate(0 %d)">`+"\n", shift)

	for i, b := range c.bands {
		from, to := x(b.from), x(b.to)
		opacity := "0.03"
		if i%2 == 1 {
			opacity = "0.08"
		}
		p.printf(`<rect class="phase" x="%s" y="%d" width="%s" height="%d" fill="#000000" fill-opacity="%s"/>`+"\n",
			num(from), plotTop, num(to-from), plotBottom-plotTop, opacity)
		p.printf(`<text class="phase-label" x="%s" y="%d" fill="#444444">%s</text>`+"\n", num(from+4), plotTop+14, esc(b.name))
	}
	for i := 0; i <= c.yDivisions; i++ {
		v := c.yMax * float64(i) / float64(c.yDivisions)
		p.printf(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#dddddd"/>`+"\n", plotLeft, num(y(v)), plotRight, num(y(v)))
		p.printf(`<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", plotLeft-6, num(y(v)+4), esc(c.yTick(v)))
	}
	for i := 0; i <= c.xDivisions; i++ {
		v := c.xMax * float64(i) / float64(c.xDivisions)
		p.printf(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333333"/>`+"\n", num(x(v)), plotBottom, num(x(v)), plotBottom+5)
		p.printf(`<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num(x(v)), plotBottom+19, esc(c.xTick(v)))
	}
	p.printf(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333333"/>`+"\n",
		plotLeft, plotTop, plotRight-plotLeft, plotBottom-plotTop)
	p.printf(`<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+40, esc(c.xLabel))
	p.printf(`<text transform="translate(20 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (plotTop+plotBottom)/2, esc(c.yLabel))

	for _, m := range c.marks {
		p.printf(`<line class="mark" x1="%s" y1="%d" x2="%s" y2="%d" %s/>`+"\n", num(x(m.x)), plotTop, num(x(m.x)), plotBottom, m.style)
	}
	for _, l := range c.lines {
		var d strings.Builder
		pen := false
		for i := range l.xs {
			if math.IsNaN(l.ys[i]) {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			if d.Len() > 0 {
				d.WriteByte(' ')
			}
			d.WriteString(cmd + num(x(l.xs[i])) + " " + num(y(l.ys[i])))
			pen = true
		}
		p.printf(`<path id="%s" class="series" fill="none" %s d="%s"/>`+"\n", l.id, l.style, d.String())
	}
	for _, m := range c.marks {
		p.printf(`<text class="mark-label" x="%s" y="%d" fill="#444444">%s</text>`+"\n",
			num(x(m.x)+4), plotTop+14, esc(m.label))
	}
	for _, n := range c.notes {
		fill := n.fill
		if fill == "" {
			fill = "#222222"
		}
		p.printf(`<text class="note" x="%s" y="%s" text-anchor="%s" fill="%s" font-weight="bold" stroke="#ffffff" stroke-width="4" paint-order="stroke">%s</text>`+"\n",
			num(x(n.x)), num(y(n.y)), n.anchor, fill, esc(n.text))
	}

	// Legend: three entries a row, under the axis label.
	for i, l := range c.lines {
		lx := float64(plotLeft) + float64(i%3)*(plotRight-plotLeft)/3
		ly := 470 + 20*(i/3)
		p.printf(`<g class="legend"><line x1="%s" y1="%d" x2="%s" y2="%d" %s/><text x="%s" y="%d">%s</text></g>`+"\n",
			num(lx), ly, num(lx+24), ly, l.style, num(lx+30), ly+4, esc(l.label))
	}
	p.printf("</g>\n</svg>\n")
}

// percent writes a share of 1 as a percentage: 0.25 is "25%".
func percent(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }
