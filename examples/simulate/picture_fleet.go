package main

import (
	"io"
)

// The fleet diagram's canvas, in SVG user units.
const (
	fleetWidth  = 960
	fleetHeight = 640
)

// diagram writes the shapes of a drawing in the simulator chart's style.
type diagram struct{ p *svgWriter }

// box draws a rectangle with rounded corners.
func (d diagram) box(x, y, w, h float64, fill, stroke string) {
	d.p.printf(`<rect x="%s" y="%s" width="%s" height="%s" rx="6" fill="%s" stroke="%s"/>`+"\n",
		num(x), num(y), num(w), num(h), fill, stroke)
}

// lines writes text lines from the baseline y down, 15 units apart; the
// first is bold when bold is set.
func (d diagram) lines(x, y float64, anchor, fill string, bold bool, text ...string) {
	for i, t := range text {
		weight := ""
		if i == 0 && bold {
			weight = ` font-weight="bold"`
		}
		d.p.printf(`<text x="%s" y="%s" text-anchor="%s" fill="%s"%s>%s</text>`+"\n",
			num(x), num(y+15*float64(i)), anchor, fill, weight, esc(t))
	}
}

// arrow draws a line from (x1, y1) to (x2, y2) with a head at its end.
func (d diagram) arrow(x1, y1, x2, y2 float64, colour, extra string) {
	d.p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.8" marker-end="url(#head-%s)"%s/>`+"\n",
		num(x1), num(y1), num(x2), num(y2), colour, colour[1:], extra)
}

// The diagram's colours: what a process writes, what it reads back, and a
// failure.
const (
	writeColour = "#1f77b4"
	readColour  = "#2ca02c"
	failColour  = "#d62728"
)

// drawFleet draws the path of a fleet's evidence through Redis, as
// redisbreaker's package comment and docs/guide/fleet.md describe it.
func drawFleet(w io.Writer) {
	p := &svgWriter{w: w}
	d := diagram{p}
	p.printf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="%d">`+"\n",
		fleetWidth, fleetHeight, fleetWidth, fleetHeight, fontSize)
	title := "A fleet's evidence through Redis (redisbreaker)"
	subtitle := "Every period, each process's Sharer adds what its breaker counted to the fleet's counters and reads them back; " +
		"calls never wait on Redis."
	p.printf("<title>%s</title>\n<desc>%s</desc>\n", esc(title), esc(subtitle))
	p.printf(`<defs>`)
	for _, c := range []string{writeColour, readColour, failColour} {
		p.printf(`<marker id="head-%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">`+
			`<path d="M0 0 L10 5 L0 10 z" fill="%s"/></marker>`, c[1:], c)
	}
	p.printf("</defs>\n")
	p.printf(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", fleetWidth, fleetHeight)
	p.printf(`<text x="40" y="26" font-size="%d" font-weight="bold">%s</text>`+"\n", titleSize, esc(title))
	p.printf(`<text x="40" y="46">%s</text>`+"\n", esc(subtitle))

	// The processes: two that reach Redis, and the N-th, which does not.
	const px, pw, ph = 40.0, 350.0, 112.0
	procs := []struct {
		name  string
		y     float64
		alone bool
	}{{"process 1", 72, false}, {"process 2", 214, false}, {"process N", 372, true}}
	for _, pr := range procs {
		stroke := "#333333"
		if pr.alone {
			stroke = failColour
		}
		d.box(px, pr.y, pw, ph, "#f7f7f7", stroke)
		d.lines(px+10, pr.y+17, "start", "#222222", true, pr.name)
		// The breaker, and the Sharer beside it.
		d.box(px+10, pr.y+26, 200, 76, "#ffffff", "#1f77b4")
		if pr.alone {
			d.lines(px+18, pr.y+44, "start", "#222222", true, `breaker "payments"`,
				"decides on its own history", "alone, as an unshared one;", "no call waits or fails for it")
		} else {
			d.lines(px+18, pr.y+44, "start", "#222222", true, `breaker "payments"`,
				"judges its own history and the", "fleet's (its own + the others'),", "drops at the higher of the two")
		}
		d.box(px+238, pr.y+26, 104, 76, "#ffffff", "#555555")
		d.lines(px+290, pr.y+44, "middle", "#222222", true, "Sharer", "its loop: one", "round a period", "(WithPeriod)")
		d.arrow(px+211, pr.y+50, px+236, pr.y+50, writeColour, "")
		d.arrow(px+236, pr.y+80, px+211, pr.y+80, readColour, "")
	}
	p.printf(`<text x="%s" y="356" text-anchor="middle" font-size="20" fill="#777777">⋮</text>`+"\n", num(px+30))
	d.lines(px+50, 347, "start", "#555555", false, "each process shares its breakers", "under their names and one prefix")

	// Redis and the keys of one breaker.
	const rx, ry, rw, rh = 620.0, 72.0, 310.0, 412.0
	d.box(rx, ry, rw, rh, "#fff5f0", "#a94442")
	d.lines(rx+12, ry+20, "start", "#222222", true, "Redis", "(a node, Sentinel or a Cluster)")
	keys := []struct {
		y    float64
		text []string
	}{
		{ry + 46, []string{"checkout:{payments}:4:<k>",
			"the newest block: a window of", "buckets on the grid all processes", "share; per bucket three uint32",
			"counters (successes, failures,", "drops), then one counting the", "processes that wrote to it"}},
		{ry + 168, []string{"checkout:{payments}:4:<k−1>",
			"the block before, read while a", "process still adds to it; a block", "expires 35 windows after it",
			"stops being the newest"}},
		{ry + 260, []string{"checkout:{payments}:override",
			"an operator's override, with its", "TTL (Sharer.SetOverride); each", "process's breaker obeys it in its",
			"next round, within one period"}},
	}
	for _, k := range keys {
		d.box(rx+10, k.y, rw-20, 15*float64(len(k.text))+8, "#ffffff", "#a94442")
		d.lines(rx+18, k.y+17, "start", "#222222", true, k.text...)
	}
	d.lines(rx+12, ry+368, "start", "#444444", false,
		"the 4 in a key is the layout's version:", "what crosses the wire is the history,", "never the formula's values")

	// What crosses the wire, for process 1; process 2 the same.
	sx, mx := px+pw, (px+pw+rx)/2
	d.arrow(sx, 102, rx-2, 102, writeColour, "")
	d.lines(mx, 94, "middle", writeColour, true, "BITFIELD … INCRBY")
	d.lines(mx, 118, "middle", writeColour, false, "adds what it counted", "since its last round")
	d.arrow(rx-2, 168, sx, 168, readColour, "")
	d.lines(mx, 160, "middle", readColour, true, "MGET blocks + override")
	d.lines(mx, 184, "middle", readColour, false, "others' sums =", "counters − its own")
	d.arrow(sx, 250, rx-2, 250, writeColour, "")
	d.arrow(rx-2, 290, sx, 290, readColour, "")
	d.lines(mx, 274, "middle", "#444444", false, "the same, every period")

	// The N-th process has lost Redis.
	d.arrow(sx, 428, rx-2, 428, failColour, ` stroke-dasharray="6 4"`)
	p.printf(`<path d="M%s 418 L%s 438 M%s 418 L%s 438" stroke="%s" stroke-width="3"/>`+"\n",
		num(mx-10), num(mx+10), num(mx+10), num(mx-10), failColour)
	d.lines(mx, 408, "middle", failColour, true, "Redis unreachable")
	d.lines(mx, 456, "middle", failColour, false, "down, slower than WithTimeout,", "or an answer it cannot use")

	// The period, and what happens when Redis fails.
	d.box(40, 500, 890, 124, "#fafafa", "#999999")
	d.lines(52, 520, "start", "#222222", true, "The period and the failures",
		"Period: WithPeriod, by default 100 ms (one bucket of a default breaker); one round in flight at a time, so a slow Redis makes",
		"rounds late, not more numerous. Past 1,000 processes a breaker's period grows to keep the fleet to 10,000 rounds a second (at most 1 s).",
		"Redis down, slow or unusable: each breaker decides on its own history, as an unshared one does; the Sharer logs it once, and once",
		"more when a later round finds Redis back. A fleet history expires one window after it was last fed, should the loop stall.",
		"A process that stops leaves nothing to clean up: its counts leave the others' windows with the grid.")
	p.printf("</svg>\n")
}
