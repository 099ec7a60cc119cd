package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// replayResult is what a replay found.
type replayResult struct {
	timeline
	start                     time.Time // the trace's first instant
	rows                      int
	span                      time.Duration // from the start to the last row
	successes, failures       int           // in the trace
	admitted, dropped         int
	failuresShed, falseDrops  int // dropped calls that would have failed, or succeeded
	admittedFailed, succeeded int // admitted calls by outcome
	firstDropAt, lastDropAt   time.Duration
	anyDrop                   bool
	rfc3339Stamps             bool // the timestamps were RFC 3339, not seconds
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
			d.finish(p, at, row.latency, row.ok, false) // a trace does not say why a call failed
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
