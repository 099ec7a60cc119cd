package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// maxTraceSpan bounds the time a trace may cover, which bounds the
// per-second counts kept in memory.
const maxTraceSpan = 7 * 24 * time.Hour

// maxTraceRow bounds the bytes of one line of a trace. A row takes a few
// dozen bytes; a file with no line break would otherwise be read whole into
// memory as one row.
const maxTraceRow = 4096

// maxTraceGap bounds the bytes from the end of one row of a trace to the
// end of the next: comments, blank lines and, through a quoted field, a
// row of several lines. A quote left open would otherwise have the rest of
// the file read into memory as one field.
const maxTraceGap = 1 << 20

// traceRow is one offered call of a trace.
type traceRow struct {
	at      time.Duration // since the trace's start
	ok      bool          // the outcome if admitted
	latency time.Duration
}

// traceReader reads a trace row by row, so that a trace of any length
// streams through in constant memory.
type traceReader struct {
	r       *csv.Reader
	in      *boundedRows
	line    int       // the line of the last row read, or of the header
	rfc3339 bool      // the first row's timestamp was RFC 3339, so all must be
	start   time.Time // the trace's start: epoch, or the first row's time
	rows    int       // data rows read so far
	started bool      // a first record was read: only it may be a header
	last    time.Duration
}

func newTraceReader(r io.Reader) *traceReader {
	in := &boundedRows{r: r}
	cr := csv.NewReader(in)
	in.csv = cr
	cr.FieldsPerRecord = -1 // checked here, with a clearer message
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	cr.ReuseRecord = true
	return &traceReader{r: cr, in: in, start: epoch}
}

// The errors of boundedRows.
var (
	errLongRow = fmt.Errorf("a line longer than %d bytes: a trace holds timestamp,outcome rows, one a line", maxTraceRow)
	errNoRow   = fmt.Errorf("more than %d bytes without a row: a quote left open?", maxTraceGap)
)

// boundedRows is a trace's file as the CSV reader reads it: it fails once
// the CSV reader asks for more while it holds over maxTraceRow bytes of a
// line (errLongRow) or over maxTraceGap bytes since the last row
// (errNoRow), so that a row costs at most that much memory.
type boundedRows struct {
	r      io.Reader
	read   int64       // bytes read from r so far
	csv    *csv.Reader // its InputOffset is the end of the last line read
	rowEnd int64       // the offset of the end of the last row read
}

func (b *boundedRows) Read(p []byte) (int, error) {
	switch {
	case b.read-b.csv.InputOffset() > maxTraceRow:
		return 0, errLongRow
	case b.read-b.rowEnd > maxTraceGap:
		return 0, errNoRow
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// next returns the next row, or io.EOF after the last. Errors name the line.
func (t *traceReader) next() (traceRow, error) {
	for {
		rec, err := t.r.Read()
		if err == io.EOF {
			if t.rows == 0 {
				return traceRow{}, errors.New("no rows: a trace needs at least one timestamp,outcome row")
			}
			return traceRow{}, io.EOF
		}
		if err != nil {
			var pe *csv.ParseError
			switch {
			case errors.As(err, &pe):
				return traceRow{}, fmt.Errorf("line %d: %v", pe.Line, pe.Err)
			case errors.Is(err, errLongRow), errors.Is(err, errNoRow):
				return traceRow{}, fmt.Errorf("after line %d: %w", t.line, err)
			}
			return traceRow{}, err
		}
		t.in.rowEnd = t.r.InputOffset()
		line, _ := t.r.FieldPos(0)
		t.line = line
		first := !t.started
		t.started = true
		if first && isHeader(rec) {
			continue
		}
		row, err := t.parse(rec)
		if err != nil {
			return traceRow{}, fmt.Errorf("line %d: %w", line, err)
		}
		t.rows++
		return row, nil
	}
}

// isHeader reports whether a first row names the columns rather than
// giving a call: its first field starts with a letter, which no timestamp
// does.
func isHeader(rec []string) bool {
	f := strings.TrimSpace(rec[0])
	return f != "" && (f[0] >= 'a' && f[0] <= 'z' || f[0] >= 'A' && f[0] <= 'Z')
}

func (t *traceReader) parse(rec []string) (traceRow, error) {
	if len(rec) < 2 || len(rec) > 3 {
		return traceRow{}, fmt.Errorf("%d fields: want timestamp,outcome or timestamp,outcome,latency", len(rec))
	}
	var row traceRow
	ts := strings.TrimSpace(rec[0])
	rfc3339 := strings.ContainsRune(ts, 'T')
	if t.rows == 0 {
		t.rfc3339 = rfc3339
	} else if rfc3339 != t.rfc3339 {
		return row, fmt.Errorf("timestamp %q: the first row's was %s, and all rows must use the same kind", ts, kindName(t.rfc3339))
	}
	if rfc3339 {
		when, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return row, fmt.Errorf("timestamp %q: not RFC 3339 (2024-01-01T00:00:00.5Z) nor seconds since the start (12.5)", ts)
		}
		if t.rows == 0 {
			t.start = when
		}
		row.at = when.Sub(t.start)
	} else {
		d, err := parseSeconds(ts)
		if err != nil {
			return row, fmt.Errorf("timestamp %q: %v", ts, err)
		}
		row.at = d
	}
	switch {
	case row.at < t.last:
		return row, fmt.Errorf("timestamp %q is before the previous row's: rows must be in time order (sort the file by its first column)", ts)
	case row.at > maxTraceSpan:
		return row, fmt.Errorf("timestamp %q is %v after the start: at most %v can be replayed", ts, row.at, maxTraceSpan)
	}
	t.last = row.at

	switch strings.ToLower(strings.TrimSpace(rec[1])) {
	case "success", "ok", "1", "true":
		row.ok = true
	case "failure", "error", "0", "false":
	default:
		return row, fmt.Errorf("outcome %q: want success, ok, 1 or true; failure, error, 0 or false", rec[1])
	}

	if len(rec) == 3 {
		lat := strings.TrimSpace(rec[2])
		d, err := time.ParseDuration(lat)
		if err != nil {
			return row, fmt.Errorf("latency %q: not a Go duration such as 250ms", lat)
		}
		if d < 0 || d > maxLatency {
			return row, fmt.Errorf("latency %q: must be between 0 and %v", lat, maxLatency)
		}
		row.latency = d
	}
	return row, nil
}

func kindName(rfc3339 bool) string {
	if rfc3339 {
		return "RFC 3339"
	}
	return "seconds since the start"
}

// parseSeconds parses a non-negative decimal number of seconds with up to
// nine decimals, exactly: no rounding through a float.
func parseSeconds(s string) (time.Duration, error) {
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("must not be negative")
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || !digitsOnly(whole) || !digitsOnly(frac) {
		return 0, errors.New("not seconds since the start (12.5) nor RFC 3339 (2024-01-01T00:00:00.5Z)")
	}
	if len(frac) > 9 {
		return 0, errors.New("more than nine decimals: the clock counts nanoseconds")
	}
	maxSeconds := int64(maxTraceSpan / time.Second)
	var sec, nsec int64
	if whole != "" {
		var err error
		if sec, err = strconv.ParseInt(whole, 10, 64); err != nil || sec > maxSeconds {
			return 0, fmt.Errorf("must be at most %d seconds", maxSeconds)
		}
	}
	if frac != "" {
		nsec, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64) // nine digits at most
	}
	return time.Duration(sec)*time.Second + time.Duration(nsec), nil
}

func digitsOnly(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// traceWriter writes offered calls in the format [traceReader] reads.
type traceWriter struct {
	w       *bufio.Writer
	latency bool // write the third column
	buf     []byte
}

func newTraceWriter(w io.Writer, latency bool) *traceWriter {
	tw := &traceWriter{w: bufio.NewWriter(w), latency: latency}
	if latency {
		tw.w.WriteString("timestamp,outcome,latency\n")
	} else {
		tw.w.WriteString("timestamp,outcome\n")
	}
	return tw
}

// write writes a call offered at d since the start: d in seconds
// with up to 9 exact decimals, its outcome, and its latency if the trace
// has that column.
func (tw *traceWriter) write(d time.Duration, ok bool, latency time.Duration) {
	b := appendSeconds(tw.buf[:0], d)
	if ok {
		b = append(b, ",success"...)
	} else {
		b = append(b, ",failure"...)
	}
	if tw.latency {
		b = append(b, ',')
		b = append(b, latency.String()...)
	}
	b = append(b, '\n')
	tw.buf = b
	tw.w.Write(b) // an error sticks in the bufio.Writer, and flush reports it
}

func (tw *traceWriter) flush() error { return tw.w.Flush() }

// appendSeconds appends d ≥ 0 as exact decimal seconds, without trailing
// zeros: 1.5, 0.0005, 12.
func appendSeconds(b []byte, d time.Duration) []byte {
	b = strconv.AppendInt(b, int64(d/time.Second), 10)
	frac := int64(d % time.Second)
	if frac == 0 {
		return b
	}
	digits := 9
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	b = append(b, '.')
	s := strconv.FormatInt(frac, 10)
	for range digits - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}
