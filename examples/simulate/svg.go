package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// chart is what an SVG chart shows: the calls of a timeline over [0, length],
// with the phases shaded behind them.
type chart struct {
	title, subtitle string
	length          time.Duration
	bands           []band
	tl              *timeline
	levels          bool // chart each criticality's successes too
}

// band is a labelled stretch of the time axis.
type band struct {
	name     string
	from, to time.Duration
}

// The chart's geometry, in SVG user units: the plot area is [plotLeft,
// plotRight] × [plotTop, plotBottom] inside a chartWidth × chartHeight view
// box, for a header of two lines; a longer header moves the plot down.
const (
	chartWidth  = 960
	chartHeight = 500
	plotLeft    = 76
	plotRight   = 884
	plotTop     = 64
	plotBottom  = 400
	maxBins     = 600 // points per series at most
)

// The header above the plot: the title's lines in bold at titleSize, then
// the subtitle's at fontSize, the chart's own. Each wraps within
// [plotLeft, headerRight] onto at most maxHeaderLines lines. Each line
// beyond one title line and one subtitle line moves everything below the
// header down by its leading, and the canvas grows to match.
const (
	fontSize        = 12
	titleSize       = 13
	titleLeading    = 17
	subtitleLeading = 16
	headerRight     = chartWidth - 16
	maxHeaderLines  = 3
)

// The series, with their colours and the names the SVG gives them.
// Offered is drawn wide and light, so that it shows behind admitted where
// the two coincide.
// style holds the attributes a series' path and its legend line share.
var chartSeries = []struct{ id, label, style string }{
	{"offered", "offered", `stroke="#b0b0b0" stroke-width="4"`},
	{"admitted", "admitted", `stroke="#1f77b4" stroke-width="1.5"`},
	{"succeeded", "succeeded", `stroke="#2ca02c" stroke-width="1.5"`},
	{"drop-probability", "drop probability (right axis)", `stroke="#d62728" stroke-width="1.5" stroke-dasharray="6 3"`},
}

// levelSeries are the successes per criticality, charted for a run with a
// mix, in the order of levels; their legend takes a second line.
var levelSeries = []struct{ id, label, style string }{
	{"succeeded-cp", "CRITICAL_PLUS succeeded", `stroke="#17becf" stroke-width="1.2" stroke-dasharray="2 2"`},
	{"succeeded-c", "CRITICAL succeeded", `stroke="#9467bd" stroke-width="1.2" stroke-dasharray="2 2"`},
	{"succeeded-sp", "SHEDDABLE_PLUS succeeded", `stroke="#ff7f0e" stroke-width="1.2" stroke-dasharray="2 2"`},
	{"succeeded-s", "SHEDDABLE succeeded", `stroke="#8c564b" stroke-width="1.2" stroke-dasharray="2 2"`},
}

// bins returns the counts the chart plots and the time each covers: 100 ms
// for a run of up to a minute, else whole seconds merged so that there are
// at most maxBins.
func (c chart) bins() (time.Duration, []counts) {
	if c.length <= chartTenths*slot {
		n := int((c.length + slot - 1) / slot)
		bins := make([]counts, n)
		copy(bins, c.tl.tenths)
		return slot, bins
	}
	secs := int((c.length + time.Second - 1) / time.Second)
	per := (secs + maxBins - 1) / maxBins
	bins := make([]counts, (secs+per-1)/per)
	for i, s := range c.tl.seconds {
		if i/per < len(bins) {
			bins[i/per].add(s)
		}
	}
	return time.Duration(per) * time.Second, bins
}

// about says what the chart plots, for the line that reports it written:
// "SVG chart of 35s in 100ms bins".
func (c chart) about() string {
	width, bins := c.bins()
	return fmt.Sprintf("SVG chart of %v in %v bins", time.Duration(len(bins))*width, width)
}

// writeSVGFile writes the chart to path.
func writeSVGFile(path string, c chart) error {
	var buf bytes.Buffer
	writeSVG(&buf, c)
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeSVG writes the chart as a self-contained SVG document. The same
// chart always gives the same bytes.
func writeSVG(w io.Writer, c chart) {
	width, bins := c.bins()
	length := time.Duration(len(bins)) * width
	perSecond := func(n int) float64 { return float64(n) / width.Seconds() }
	top := 1.0
	for _, b := range bins {
		top = max(top, perSecond(b.offered))
	}
	top, divisions := niceCeil(1.1 * top) // headroom above the highest line
	x := func(d time.Duration) float64 {
		return plotLeft + (plotRight-plotLeft)*float64(d)/float64(length)
	}
	yLeft := func(v float64) float64 { return plotBottom - (plotBottom-plotTop)*v/top }
	yRight := func(p float64) float64 { return plotBottom - (plotBottom-plotTop)*p }

	titleLines := wrapText(c.title, titleSize, true, headerRight-plotLeft, maxHeaderLines)
	subtitleLines := wrapText(c.subtitle, fontSize, false, headerRight-plotLeft, maxHeaderLines)
	shift := titleLeading*(len(titleLines)-1) + subtitleLeading*(len(subtitleLines)-1)

	p := &svgWriter{w: w}
	p.printf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="%d">`+"\n",
		chartWidth, chartHeight+shift, chartWidth, chartHeight+shift, fontSize)
	p.printf("<title>%s</title>\n", esc(c.title))
	p.printf("<desc>%s</desc>\n", esc(c.subtitle)) // in full, should the header have cut it
	p.printf(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartWidth, chartHeight+shift)
	y := 26 // the first title line's baseline
	for i, line := range titleLines {
		if i > 0 {
			y += titleLeading
		}
		p.printf(`<text class="title" x="%d" y="%d" font-size="%d" font-weight="bold">%s</text>`+"\n", plotLeft, y, titleSize, esc(line))
	}
	y += 20 // the subtitle's first baseline, below the title's last
	for _, line := range subtitleLines {
		p.printf(`<text class="subtitle" x="%d" y="%d">%s</text>`+"\n", plotLeft, y, esc(line))
		y += subtitleLeading
	}
	p.printf(`<g transform="translate(0 %d)">`+"\n", shift)

	// Phases, behind everything else.
	for i, b := range c.bands {
		from, to := x(min(b.from, length)), x(min(b.to, length))
		if to <= from {
			continue
		}
		fill := "#000000"
		opacity := "0.03"
		if i%2 == 1 {
			opacity = "0.08"
		}
		p.printf(`<rect class="phase" x="%s" y="%d" width="%s" height="%d" fill="%s" fill-opacity="%s"/>`+"\n",
			num(from), plotTop, num(to-from), plotBottom-plotTop, fill, opacity)
		if to-from >= textWidth(b.name, fontSize, false)+8 { // room for the label
			p.printf(`<text class="phase-label" x="%s" y="%d" fill="#444444">%s</text>`+"\n", num(from+4), plotTop+14, esc(b.name))
		}
	}

	// Grid and axes.
	for i := 0; i <= divisions; i++ {
		share := float64(i) / float64(divisions)
		y := yRight(share)
		p.printf(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#dddddd"/>`+"\n", plotLeft, num(y), plotRight, num(y))
		p.printf(`<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", plotLeft-6, num(y+4), esc(formatRate(top*share)))
		p.printf(`<text x="%d" y="%s">%s</text>`+"\n", plotRight+6, num(y+4), strconv.FormatFloat(share, 'f', -1, 64))
	}
	step := timeStep(length)
	for t := time.Duration(0); t <= length; t += step {
		xt := x(t)
		p.printf(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#333333"/>`+"\n", num(xt), plotBottom, num(xt), plotBottom+5)
		p.printf(`<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num(xt), plotBottom+19, esc(formatTick(t)))
	}
	p.printf(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333333"/>`+"\n",
		plotLeft, plotTop, plotRight-plotLeft, plotBottom-plotTop)
	p.printf(`<text x="%d" y="%d" text-anchor="middle">time since the start</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+40)
	p.printf(`<text transform="translate(20 %d) rotate(-90)" text-anchor="middle">calls per second (per %v bin)</text>`+"\n",
		(plotTop+plotBottom)/2, width)
	p.printf(`<text transform="translate(%d %d) rotate(90)" text-anchor="middle">drop probability (dropped / offered)</text>`+"\n",
		chartWidth-22, (plotTop+plotBottom)/2)

	// The series: a point per bin, at its middle.
	mid := func(i int) float64 { return x(time.Duration(i)*width + width/2) }
	series := chartSeries
	if c.levels {
		series = append(slices.Clip(series), levelSeries...)
	}
	for _, s := range series {
		var d strings.Builder
		pen := false
		for i, b := range bins {
			var y float64
			switch s.id {
			case "offered":
				y = yLeft(perSecond(b.offered))
			case "admitted":
				y = yLeft(perSecond(b.allowed))
			case "succeeded":
				y = yLeft(perSecond(b.succeeded))
			case "succeeded-cp", "succeeded-c", "succeeded-sp", "succeeded-s":
				y = yLeft(perSecond(b.levels[levelSeriesIndex(s.id)].succeeded))
			default:
				if b.offered == 0 { // no calls, no probability: a gap
					pen = false
					continue
				}
				y = yRight(float64(b.dropped) / float64(b.offered))
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			if d.Len() > 0 {
				d.WriteByte(' ')
			}
			d.WriteString(cmd + num(mid(i)) + " " + num(y))
			pen = true
		}
		p.printf(`<path id="%s" class="series" fill="none" %s d="%s"/>`+"\n", s.id, s.style, d.String())
	}

	// Legend, under the axis label.
	lx := float64(plotLeft)
	for _, s := range chartSeries {
		p.printf(`<g class="legend"><line x1="%s" y1="470" x2="%s" y2="470" %s/><text x="%s" y="474">%s</text></g>`+"\n",
			num(lx), num(lx+24), s.style, num(lx+30), esc(s.label))
		lx += 40 + textWidth(s.label, fontSize, false)
	}
	if c.levels {
		lx = float64(plotLeft)
		for _, s := range levelSeries {
			p.printf(`<g class="legend"><line x1="%s" y1="490" x2="%s" y2="490" %s/><text x="%s" y="494">%s</text></g>`+"\n",
				num(lx), num(lx+24), s.style, num(lx+30), esc(s.label))
			lx += 40 + textWidth(s.label, fontSize, false)
		}
	}
	p.printf("</g>\n</svg>\n")
}

// wrapText splits s at spaces into lines that textWidth puts within width
// at the given size. When s needs more than one line, a word ending in a
// colon ends its line too, so that "simulation: K=1.5 …" breaks after the
// colon. At most maxLines lines: the rest of the text joins the last one,
// and a line still too wide (a long word, a path) is cut and ends in "…".
func wrapText(s string, size float64, bold bool, width float64, maxLines int) []string {
	if textWidth(s, size, bold) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len(lines) < maxLines-1 && textWidth(line+" "+word, size, bold) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
		if strings.HasSuffix(line, ":") && len(lines) < maxLines-1 {
			lines = append(lines, line)
			line = ""
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	for i, l := range lines {
		lines[i] = cutText(l, size, bold, width)
	}
	return lines
}

// cutText returns s if textWidth puts it within width, else as much of s
// as fits followed by "…".
func cutText(s string, size float64, bold bool, width float64) string {
	if textWidth(s, size, bold) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && textWidth(string(r)+"…", size, bold) > width {
		r = r[:len(r)-1]
	}
	return strings.TrimRight(string(r), " ") + "…"
}

// textWidth estimates the width of s at the given font size, in user units.
// The widths per character are those of DejaVu Sans, the widest of the
// common sans-serif fonts, rounded up, so that text that fits by this
// estimate fits in the font the viewer picks; bold adds 13 %.
func textWidth(s string, size float64, bold bool) float64 {
	em := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune(" .,:;'!|ijl", r):
			em += 0.34
		case strings.ContainsRune(`frt-/\()[]{}"`, r):
			em += 0.5
		case strings.ContainsRune("mwMW%@", r):
			em += 1
		case strings.ContainsRune("=+<>~#&", r):
			em += 0.84
		case r >= 'A' && r <= 'Z':
			em += 0.74
		case r >= 0x2E80: // CJK and other full-width scripts
			em += 1
		default:
			em += 0.64
		}
	}
	if bold {
		em *= 1.13
	}
	return em * size
}

// svgWriter is fmt.Fprintf bound to one writer. writeSVG's callers give it
// a buffer, so it has no write errors to report.
type svgWriter struct{ w io.Writer }

func (p *svgWriter) printf(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

// esc escapes s for text or a double-quoted attribute.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// num formats a coordinate with one decimal.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// niceCeil returns the smallest of 1, 2, 2.5 or 5 times a power of ten that
// is at least v > 0, and how many round divisions it splits into.
func niceCeil(v float64) (float64, int) {
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []struct {
		mantissa  float64
		divisions int
	}{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}} {
		if m.mantissa*mag >= v*(1-1e-12) {
			return m.mantissa * mag, m.divisions
		}
	}
	return 10 * mag, 5
}

// timeStep returns a round tick spacing that puts at most 10 ticks on an
// axis of the given length.
func timeStep(length time.Duration) time.Duration {
	for _, s := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour} {
		if length/s <= 10 {
			return s
		}
	}
	return 24 * time.Hour
}

// formatTick writes a tick's time compactly: 500ms, 10s, 1m30s, 2h.
func formatTick(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// formatRate writes an axis value: 1500, 2.5k, 1M.
func formatRate(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// levelSeriesIndex returns the index into levels of a level series.
func levelSeriesIndex(id string) int {
	for i, s := range levelSeries {
		if s.id == id {
			return i
		}
	}
	return 0
}
