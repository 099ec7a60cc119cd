package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// maxTraceSpan bounds the time a trace may cover, which bounds the
// per-second counts kept in memory.
const maxTraceSpan = 7 * 24 * time.Hour

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
	rfc3339 bool      // the first row's timestamp was RFC 3339, so all must be
	start   time.Time // the trace's start: epoch, or the first row's time
	rows    int       // data rows read so far
	started bool      // a first record was read: only it may be a header
	last    time.Duration
}

func newTraceReader(r io.Reader) *traceReader {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked here, with a clearer message
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	cr.ReuseRecord = true
	return &traceReader{r: cr, start: epoch}
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
			if errors.As(err, &pe) {
				return traceRow{}, fmt.Errorf("line %d: %v", pe.Line, pe.Err)
			}
			return traceRow{}, err
		}
		line, _ := t.r.FieldPos(0)
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
	const bad = "not seconds since the start (12.5) nor RFC 3339 (2024-01-01T00:00:00.5Z)"
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || strings.HasPrefix(whole, "-") {
		if strings.HasPrefix(whole, "-") {
			return 0, errors.New("must not be negative")
		}
		return 0, errors.New(bad)
	}
	if len(frac) > 9 {
		return 0, errors.New("more than nine decimals: the clock counts nanoseconds")
	}
	var sec, nsec int64
	var err error
	if whole != "" {
		if !digitsOnly(whole) {
			return 0, errors.New(bad)
		}
		if sec, err = strconv.ParseInt(whole, 10, 64); err != nil || sec > int64(maxTraceSpan/time.Second) {
			return 0, fmt.Errorf("must be at most %d seconds", int64(maxTraceSpan/time.Second))
		}
	}
	if frac != "" {
		if !digitsOnly(frac) {
			return 0, errors.New(bad)
		}
		nsec, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
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

// replayResult is what a replay found.
type replayResult struct {
	timeline
	start                      time.Time // the trace's first instant
	rows                       int
	span                       time.Duration // from the start to the last row
	successes, failures        int           // in the trace
	admitted, dropped          int
	failuresShed, falseDrops   int // dropped calls that would have failed, or succeeded
	admittedFailed, succeeded  int // admitted calls by outcome
	firstDropAt, lastDropAt    time.Duration
	anyDrop                    bool
	latencySeen, rfc3339Stamps bool
}

// replayFile replays the trace at path; errors start with the path.
func replayFile(bc breakerConfig, path string) (*replayResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := replay(bc, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// replay offers each row of the trace to a breaker built from bc at the
// row's time on a virtual clock; an admitted row's outcome is reported
// after its latency. The breaker's clock starts at the trace's start, so a
// trace recorded by a simulation replays through the same bucket
// boundaries.
func replay(bc breakerConfig, r io.Reader) (*replayResult, error) {
	tr := newTraceReader(r)
	res := &replayResult{}
	var d *driver
	for {
		row, err := tr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if d == nil { // the first row fixes the start
			if d, err = newDriver(bc, tr.start); err != nil {
				return nil, err
			}
			res.start, res.rfc3339Stamps = tr.start, tr.rfc3339
		}
		res.rows++
		res.span = row.at
		res.latencySeen = res.latencySeen || row.latency > 0
		if row.ok {
			res.successes++
		} else {
			res.failures++
		}
		at := tr.start.Add(row.at)
		c := counts{offered: 1}
		if p := d.allow(at); p != nil {
			c.allowed = 1
			res.admitted++
			if row.ok {
				c.succeeded = 1
				res.succeeded++
			} else {
				res.admittedFailed++
			}
			d.finish(p, at, row.latency, row.ok)
		} else {
			c.dropped = 1
			res.dropped++
			if row.ok {
				c.falseDrops = 1
				res.falseDrops++
			} else {
				res.failuresShed++
			}
			if !res.anyDrop {
				res.firstDropAt, res.anyDrop = row.at, true
			}
			res.lastDropAt = row.at
		}
		res.timeline.add(row.at, c)
	}
	d.drain()
	return res, nil
}
