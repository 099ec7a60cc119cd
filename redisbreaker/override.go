package redisbreaker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/override"
)

// A fleet's override of a breaker is one Redis string, at
//
//	<prefix>{<name>}:override
//
// beside the breaker's blocks (one slot on a cluster), which expires when
// the override does. Its value, in order, separated by single spaces:
// "1" (the layout), when it was set (Unix ms), its TTL (ms), its mode
// (override.Mode's number), the length of By in bytes, then By and
// Reason, back to back. Every round reads it with the breaker's blocks.

// overrideKey returns the key of the fleet's override of the breaker whose
// keys start with base.
func overrideKey(base string) string { return base + ":override" }

// maxOverrideSetAt is the latest time an override may say it was set, in
// Unix ms: the end of the year 9999.
const maxOverrideSetAt = 253402300799999

// maxOverrideText bounds By and Reason in Redis; the breaker bounds them
// again, shorter, when the override is set.
const maxOverrideText = 1024

// fleetOverride is an override as the fleet keeps it.
type fleetOverride struct {
	setAt time.Time
	ttl   time.Duration
	mode  override.Mode
	by    string
	why   string
}

func (o fleetOverride) encode() string {
	return fmt.Sprintf("1 %d %d %d %d %s%s", o.setAt.UnixMilli(), o.ttl.Milliseconds(), int(o.mode), len(o.by), o.by, o.why)
}

// maxOverrideValue bounds an override's value as encode writes it: five
// numbers, By and Reason.
const maxOverrideValue = 5*21 + 2*maxOverrideText

// parseOverride reads a fleet's override; an error names what was wrong.
// What no sharer writes is refused: a value longer than encode writes, a
// TTL above override.MaxTTL, a set time before the Unix epoch or
// past the year 9999.
func parseOverride(v string) (fleetOverride, error) {
	var o fleetOverride
	if len(v) > maxOverrideValue {
		return o, fmt.Errorf("override of %d bytes: more than %d", len(v), maxOverrideValue)
	}
	fields := strings.SplitN(v, " ", 6)
	if len(fields) != 6 || fields[0] != "1" {
		return o, fmt.Errorf("override %.100q: not layout 1", v)
	}
	var n [4]int64
	for i := range n {
		x, err := strconv.ParseInt(fields[i+1], 10, 64)
		if err != nil || x < 0 {
			return o, fmt.Errorf("override %.100q: field %d: not a count", v, i+2)
		}
		n[i] = x
	}
	rest := fields[5]
	switch {
	case n[0] > maxOverrideSetAt:
		return o, fmt.Errorf("override %.100q: set at %d ms: past the year 9999", v, n[0])
	case n[1] == 0 || n[1] > override.MaxTTL.Milliseconds():
		return o, fmt.Errorf("override %.100q: TTL of %d ms: must be above 0 and at most %v", v, n[1], override.MaxTTL)
	case n[3] > int64(len(rest)):
		return o, fmt.Errorf("override %.100q: By of %d bytes, longer than what follows", v, n[3])
	}
	o = fleetOverride{setAt: time.UnixMilli(n[0]), ttl: time.Duration(n[1]) * time.Millisecond,
		mode: override.Mode(n[2]), by: rest[:n[3]], why: rest[n[3]:]}
	if o.mode != override.ShedAll && o.mode != override.ShedNone {
		return o, fmt.Errorf("override %.100q: mode %d: neither shed_all nor shed_none", v, n[2])
	}
	return o, nil
}

// SetOverride sets o on the breaker named name in every process that
// shares it through this prefix: each process's sharer reads it in the
// breaker's next round, within one period, and sets it on its breaker
// ([breaker.Breaker.SetOverride]) for what is left of o.TTL, counted from now on
// this sharer's clock (Redis drops it then too). The override replaces
// one the fleet held, and one set on a process's breaker by other means
// until then; one set on a process's breaker after it stays until the
// fleet's changes. The sharer need not share name itself (an operator's
// tool may make a Sharer for this alone), and it need not be started.
//
// It returns an error wrapping [breaker.ErrInvalidOverride], naming the
// field, for a mode other than [override.ShedAll] and [override.ShedNone] or
// a TTL not above 0 and at most [override.MaxTTL]; one for a name
// longer than 1024 bytes; Redis's error, wrapping [ErrUnreachable], when
// the write fails or takes longer than the timeout ([WithTimeout]) or
// ctx's deadline, by which it returns; and one wrapping [ErrClosed] after
// [Sharer.Close], without writing. Reason and By are cut to 1024 bytes
// here, and to the breaker's bound when set.
func (s *Sharer) SetOverride(ctx context.Context, name string, o override.Spec) error {
	switch {
	case len(name) > maxNameSize:
		return fmt.Errorf("redisbreaker: breaker name of %d bytes: at most %d", len(name), maxNameSize)
	case o.Mode != override.ShedAll && o.Mode != override.ShedNone:
		return fmt.Errorf("%w: Mode %v: must be shed_all or shed_none", breaker.ErrInvalidOverride, o.Mode)
	case o.TTL <= 0 || o.TTL > override.MaxTTL:
		return fmt.Errorf("%w: TTL %v: must be above 0 and at most %v", breaker.ErrInvalidOverride, o.TTL, override.MaxTTL)
	}
	ttl := o.TTL.Truncate(time.Millisecond)
	if ttl <= 0 {
		ttl = time.Millisecond
	}
	f := fleetOverride{setAt: s.o.clock.Now(), ttl: ttl, mode: o.Mode, by: cut(o.By), why: cut(o.Reason)}
	return s.call(ctx, "SetOverride", func(ctx context.Context) error {
		return s.client.Set(ctx, overrideKey(keyBase(s.o.prefix, name)), f.encode(), ttl).Err()
	})
}

// ClearOverride clears the fleet's override of the breaker named name:
// each process's sharer clears, within one period, the override it set
// from the fleet's, unless one was set on its breaker by other means since.
// It returns Redis's error, wrapping [ErrUnreachable], when the delete
// fails or takes longer than the timeout ([WithTimeout]) or ctx's
// deadline, by which it returns, and one wrapping [ErrClosed] after
// [Sharer.Close], without deleting.
func (s *Sharer) ClearOverride(ctx context.Context, name string) error {
	if len(name) > maxNameSize {
		return fmt.Errorf("redisbreaker: breaker name of %d bytes: at most %d", len(name), maxNameSize)
	}
	return s.call(ctx, "ClearOverride", func(ctx context.Context) error {
		return s.client.Del(ctx, overrideKey(keyBase(s.o.prefix, name))).Err()
	})
}

// cut returns s cut to maxOverrideText bytes.
func cut(s string) string {
	if len(s) > maxOverrideText {
		return s[:maxOverrideText]
	}
	return s
}

// takeOverride applies the fleet's override read for m (nil: none) to its
// breaker, at now.
func (s *Sharer) takeOverride(m *member, v any, now time.Time) error {
	g := &m.grid
	var o fleetOverride
	has := false
	switch v := v.(type) {
	case nil:
	case string:
		var err error
		if o, err = parseOverride(v); err != nil {
			return fmt.Errorf("%w: %w", errUnusable, err)
		}
		has = o.setAt.Add(o.ttl).After(now)
	default:
		return fmt.Errorf("%w: override: got %T, not a string", errUnusable, v)
	}
	if !has {
		if g.applied != nil {
			// Clear what the fleet set, unless something else was set since.
			if a, ok := m.b.Override(); ok && a.SetAt.Equal(g.appliedAt) {
				m.b.ClearOverride()
			}
			g.applied = nil
		}
		return nil
	}
	if g.applied != nil && *g.applied == o {
		return nil // set before; the breaker ends it on its own
	}
	// What is left of the TTL: never more than it was set for, whatever
	// the time it says it was set.
	ttl := min(o.setAt.Add(o.ttl).Sub(now), o.ttl)
	err := m.b.SetOverride(override.Spec{Mode: o.mode, TTL: ttl, Reason: o.why, By: o.by})
	if err != nil && !errors.Is(err, breaker.ErrInvalidOverride) {
		return err
	}
	if a, ok := m.b.Override(); ok {
		g.applied, g.appliedAt = &o, a.SetAt
	}
	return nil
}
