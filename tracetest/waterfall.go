package tracetest

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/srebreaker/srebreaker/otelbreaker"
)

// The waterfall's geometry, in SVG user units: a column of span names on
// the left, the time axis from axisLeft to axisRight, a row per span.
const (
	waterfallWidth = 960
	axisLeft       = 300
	axisRight      = 780
	rowHeight      = 26
	rowsTop        = 92
	fontSize       = 12
)

// The bars' colours: a span that ended well, one the server answered with
// an error, and the one whose call a breaker dropped.
const (
	okColour    = "#4c78a8"
	errorColour = "#f2a93b"
	dropColour  = "#d62728"
)

// WriteWaterfall draws spans as a tracing UI shows a trace: a row per span,
// children under their parents in the order they started, each a bar on
// one time axis from the first start to the last end, with its duration
// and, for an HTTP client or server span, its status code. A span that
// holds an [otelbreaker.DropEvent] is drawn in red with a marker at the
// event's time, and the event's attributes are listed under the rows.
// title heads the picture. It returns an error when spans is empty, and
// the error of w if a write fails.
func WriteWaterfall(w io.Writer, title string, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return errors.New("tracetest: no spans to draw")
	}
	rows := order(spans)
	start, end := rows[0].span.StartTime(), rows[0].span.EndTime()
	for _, r := range rows {
		start = minTime(start, r.span.StartTime())
		end = maxTime(end, r.span.EndTime())
	}
	length := max(end.Sub(start), time.Microsecond)
	x := func(t time.Time) float64 {
		return axisLeft + (axisRight-axisLeft)*float64(t.Sub(start))/float64(length)
	}

	var drop *sdktrace.Event
	for _, r := range rows {
		if e := spanDropEvent(r.span); e != nil {
			drop = e
		}
	}
	rowsBottom := rowsTop + rowHeight*len(rows)
	height := rowsBottom + 70
	if drop != nil {
		height += 24 + 17*len(drop.Attributes)
	}

	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="%d">`+"\n",
		waterfallWidth, height, waterfallWidth, height, fontSize)
	p("<title>%s</title>\n", esc(title))
	p(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", waterfallWidth, height)
	p(`<text x="20" y="26" font-size="13" font-weight="bold">%s</text>`+"\n", esc(title))
	p(`<text x="20" y="46">%d spans recorded by the OpenTelemetry SDK's span recorder; time from the first span's start.</text>`+"\n", len(rows))

	// The time axis, with ticks above the rows and grid lines through them.
	step := tickStep(length)
	p(`<text x="20" y="%d" font-weight="bold">span</text>`+"\n", rowsTop-12)
	for t := time.Duration(0); t <= length; t += step {
		xt := axisLeft + (axisRight-axisLeft)*float64(t)/float64(length)
		p(`<line class="tick" x1="%s" y1="%d" x2="%s" y2="%d" stroke="#e4e4e4"/>`+"\n", num(xt), rowsTop-6, num(xt), rowsBottom)
		p(`<text class="tick" x="%s" y="%d" text-anchor="middle" fill="#555555">%s</text>`+"\n", num(xt), rowsTop-12, esc(formatDuration(t)))
	}

	// The rows.
	for i, r := range rows {
		y := rowsTop + rowHeight*i
		switch {
		case spanDropEvent(r.span) != nil: // the row of the drop stands out
			p(`<rect x="12" y="%d" width="%d" height="%d" fill="#fde8e8" stroke="%s"/>`+"\n", y, waterfallWidth-24, rowHeight, dropColour)
		case i%2 == 1:
			p(`<rect x="12" y="%d" width="%d" height="%d" fill="#f6f6f6"/>`+"\n", y, waterfallWidth-24, rowHeight)
		}
		colour, note := okColour, ""
		switch {
		case spanDropEvent(r.span) != nil:
			colour, note = dropColour, "dropped"
		case r.span.Status().Code == codes.Error:
			colour = errorColour
		}
		if code, ok := statusCode(r.span); ok {
			note = "HTTP " + strconv.FormatInt(code, 10)
		}
		weight, nameColour := "", "#222222"
		if colour == dropColour {
			weight, nameColour = ` font-weight="bold"`, dropColour
		}
		p(`<text x="%d" y="%d" fill="%s"%s>%s%s</text>`+"\n", 20+14*r.depth, y+17, nameColour, weight,
			esc(kindMark(r.span.SpanKind())), esc(r.span.Name()))
		x0, x1 := x(r.span.StartTime()), x(r.span.EndTime())
		p(`<rect class="span" x="%s" y="%d" width="%s" height="%d" rx="2" fill="%s"/>`+"\n",
			num(x0), y+6, num(max(x1-x0, 2)), rowHeight-12, colour)
		label := formatDuration(r.span.EndTime().Sub(r.span.StartTime()))
		p(`<text class="duration" x="%s" y="%d" fill="#444444">%s</text>`+"\n", num(max(x1, x0+2)+6), y+17, esc(label))
		if note != "" {
			p(`<text x="%d" y="%d" text-anchor="end" fill="%s"%s>%s</text>`+"\n", waterfallWidth-16, y+17, colour, weight, esc(note))
		}
		if e := spanDropEvent(r.span); e != nil {
			xe := x(e.Time)
			p(`<path class="event" d="M%s %d L%s %d L%s %d L%s %d z" fill="#ffffff" stroke="#000000" stroke-width="1.5"/>`+"\n",
				num(xe), y+3, num(xe+7), y+13, num(xe), y+23, num(xe-7), y+13)
		}
	}

	// The legend, then the drop event's attributes.
	ly := rowsBottom + 28
	lx := 20
	for _, l := range []struct{ colour, text string }{
		{okColour, "span"}, {errorColour, "error status (the server's 5xx)"}, {dropColour, "dropped by the breaker"},
	} {
		p(`<rect x="%d" y="%d" width="18" height="12" rx="2" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, ly-10, l.colour, lx+24, ly, esc(l.text))
		lx += 60 + 7*len(l.text)
	}
	p(`<path d="M%d %d L%d %d L%d %d L%d %d z" fill="#ffffff" stroke="#000000" stroke-width="1.5"/><text x="%d" y="%d">%s event</text>`+"\n",
		lx+7, ly-11, lx+14, ly-4, lx+7, ly+3, lx, ly-4, lx+20, ly, otelbreaker.DropEvent)
	p(`<text x="20" y="%d" fill="#555555">├ client span, └ server span (its parent in another process: the trace context went in the request's headers)</text>`+"\n", ly+22)
	if drop != nil {
		y := ly + 50
		p(`<text x="20" y="%d" font-weight="bold" fill="%s">event %s on the dropped call's span, at %s:</text>`+"\n",
			y, dropColour, esc(drop.Name), esc(formatDuration(drop.Time.Sub(start))))
		for i, kv := range drop.Attributes {
			p(`<text x="36" y="%d"><tspan font-family="monospace">%s</tspan> = %s</text>`+"\n",
				y+18+17*i, esc(string(kv.Key)), esc(emit(kv.Value)))
		}
	}
	p("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// emit writes an attribute's value, a float64 to three significant
// digits.
func emit(v attribute.Value) string {
	if v.Type() == attribute.FLOAT64 {
		return strconv.FormatFloat(v.AsFloat64(), 'g', 3, 64)
	}
	return v.String()
}

// row is a span and how deep it sits under the spans drawn.
type row struct {
	span  sdktrace.ReadOnlySpan
	depth int
}

// order returns spans depth first: each span's children under it, in the
// order they started. A span whose parent is not among spans is a root.
func order(spans []sdktrace.ReadOnlySpan) []row {
	byStart := slices.Clone(spans)
	slices.SortStableFunc(byStart, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	have := map[trace.SpanID]bool{}
	for _, s := range byStart {
		have[s.SpanContext().SpanID()] = true
	}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range byStart {
		if parent := s.Parent().SpanID(); s.Parent().IsValid() && have[parent] {
			children[parent] = append(children[parent], s)
		} else {
			roots = append(roots, s)
		}
	}
	var out []row
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		out = append(out, row{s, depth})
		for _, c := range children[s.SpanContext().SpanID()] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return out
}

// spanDropEvent returns span's drop event, or nil.
func spanDropEvent(span sdktrace.ReadOnlySpan) *sdktrace.Event {
	for _, e := range span.Events() {
		if e.Name == otelbreaker.DropEvent {
			return &e
		}
	}
	return nil
}

// statusCode returns the HTTP status code otelhttp recorded on span.
func statusCode(span sdktrace.ReadOnlySpan) (int64, bool) {
	for _, kv := range span.Attributes() {
		if kv.Key == "http.response.status_code" || kv.Key == "http.status_code" {
			return kv.Value.AsInt64(), true
		}
	}
	return 0, false
}

// kindMark prefixes a client span's name with "├ " and a server span's
// with "└ ".
func kindMark(k trace.SpanKind) string {
	switch k {
	case trace.SpanKindClient:
		return "├ "
	case trace.SpanKindServer:
		return "└ "
	}
	return ""
}

// tickStep returns the smallest of 1, 2 and 5 times a power of ten that
// splits length into at most 8 steps.
func tickStep(length time.Duration) time.Duration {
	for s := time.Microsecond; ; s *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if length/(s*m) <= 8 {
				return s * m
			}
		}
	}
}

// formatDuration writes d in milliseconds, with a precision that suits it.
func formatDuration(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms == 0:
		return "0"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// esc escapes s for text or a double-quoted attribute.
func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // a bytes.Buffer does not fail
	return b.String()
}

// num formats a coordinate with one decimal.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
