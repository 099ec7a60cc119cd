package redisbreaker

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
	"github.com/srebreaker/srebreaker/override"
)

var fuzzStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// readBack runs a round of a default breaker named "payments" that
// counted successes and failures of its own, without Redis: the adds
// went through, and the MGET read newest as the newest block, override as
// the fleet's override, before as the block before and old as every older
// block (an empty value: no key). It returns the plan, the breaker, and
// what settling the round and taking the override returned.
func readBack(t *testing.T, newest, before, old []byte, override string, successes, failures uint8) (*gridPlan, breaker.Breaker, fleet.History, error) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(fuzzStart)
	b := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(clk))
	for i := range int(successes) + int(failures) {
		if p, err := b.Allow(); err == nil {
			if i < int(successes) {
				p.Accept()
			} else {
				p.Reject("boom")
			}
		}
	}
	link, ok := fleet.Of(b)
	require.True(t, ok)
	s := &Sharer{o: options{prefix: "f:", period: DefaultPeriod, timeout: DefaultTimeout,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)), clock: clk}}
	m := &member{b: b, fleet: link, grid: newGridState(s.o.prefix, "payments")}
	p := planGrid(m)
	ctx := context.Background()
	for i := range p.adds {
		p.adds[i].cmd = redis.NewCmd(ctx)
		p.adds[i].cmd.SetVal([]any{int64(1)})
	}
	value := func(b []byte) any {
		if len(b) == 0 {
			return nil
		}
		return string(b)
	}
	vals := make([]any, len(p.keys))
	vals[0] = value(newest)
	if override != "" {
		vals[1] = override
	}
	for i := 2; i < len(vals); i++ {
		vals[i] = value(old)
	}
	if p.before {
		vals[2] = value(before)
	}
	p.read = redis.NewSliceCmd(ctx)
	p.read.SetVal(vals)
	p.countAdds(true)
	others, err := p.settle(clk.Now(), s.o.period)
	if err == nil {
		err = s.takeOverride(m, p.override, clk.Now())
	}
	return p, b, others, err
}

// FuzzReadBack feeds a sharer's round what other processes, other
// versions or a corrupt write may leave in a breaker's keys: blocks of any
// bytes and any override. Nothing panics; what the round accepts is a
// history the breaker takes, none of whose buckets holds more calls than
// the fleet's processes could have counted (maxProcessRate), and an
// override that lasts no longer than it was set for, at most
// override.MaxTTL.
func FuzzReadBack(f *testing.F) {
	// The seed corpus is in testdata/fuzz/FuzzReadBack.
	f.Fuzz(func(t *testing.T, newest, before, old []byte, value string, successes, failures uint8) {
		p, b, others, err := readBack(t, newest, before, old, value, successes, failures)
		if err != nil {
			return
		}
		link, _ := fleet.Of(b)
		require.NoError(t, link.SetOthers(others), "the breaker takes what the round accepted")
		g := &p.m.grid
		limit := float64(max(g.processes, 1)) * maxProcessRate * others.Span.Seconds()
		for i, c := range others.Buckets {
			calls := float64(c.Successes) + float64(c.Failures) + float64(c.Drops)
			require.LessOrEqual(t, calls, limit, "bucket %d of the others': more calls than %d processes count", i, g.processes)
		}
		oldLimit := float64(p.size) * float64(max(g.processes, block(old).counter(membersAt(p.size)), 1)) *
			maxProcessRate * others.Span.Seconds()
		for i, c := range others.Blocks {
			calls := float64(c.Successes) + float64(c.Failures) + float64(c.Drops)
			require.LessOrEqual(t, calls, oldLimit, "block %d of the others'", i)
		}
		if o, ok := b.Override(); ok {
			parsed, err := parseOverride(value)
			require.NoError(t, err, "an override was set from a value that does not parse")
			require.LessOrEqual(t, o.Remaining(fuzzStart), parsed.ttl, "no longer than it was set for")
			require.LessOrEqual(t, o.Remaining(fuzzStart), override.MaxTTL)
		}
	})
}

// blockOf returns a block of a default breaker (20 buckets) whose bucket i
// holds c, counting processes.
func blockOf(i int, c fleet.Bucket, processes uint32) []byte {
	v := make([]byte, 4*61)
	binary.BigEndian.PutUint32(v[4*3*i:], uint32(c.Successes))
	binary.BigEndian.PutUint32(v[4*(3*i+1):], uint32(c.Failures))
	binary.BigEndian.PutUint32(v[4*(3*i+2):], uint32(c.Drops))
	binary.BigEndian.PutUint32(v[4*60:], processes)
	return v
}

// A bucket holding more calls than its block's processes could have
// counted, a call a nanosecond each, is refused, not shed on; up to that,
// it counts.
func TestReadBack_refusesWhatNoFleetCounted(t *testing.T) {
	span := breaker.DefaultWindow / 20 // 100 ms: at most 10^8 calls a process
	_, _, others, err := readBack(t, blockOf(3, fleet.Bucket{Failures: 200_000_000}, 2), nil, nil, "", 0, 0)
	require.NoError(t, err, "two processes may count 2·10^8 calls in %v", span)
	var failures int64
	for _, c := range others.Buckets {
		failures += c.Failures
	}
	assert.Equal(t, int64(200_000_000), failures)

	for _, tc := range []struct {
		name  string
		block []byte
	}{
		{"one call too many", blockOf(3, fleet.Bucket{Failures: 200_000_001}, 2)},
		{"saturated counters, one process", blockOf(0, fleet.Bucket{Successes: 1<<32 - 1, Failures: 1<<32 - 1}, 1)},
		{"drops count as calls", blockOf(7, fleet.Bucket{Successes: 1, Drops: 100_000_000}, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, b, _, err := readBack(t, tc.block, nil, nil, "", 0, 0)
			require.ErrorIs(t, err, errUnusable)
			assert.ErrorContains(t, err, "more than")
			s := b.Stats()
			assert.Equal(t, 0.0, s.DropProbability)
		})
	}
}

// An value is held no longer than it was set for, whatever the time it
// says it was set, and one no sharer writes is refused.
func TestReadBack_overrides(t *testing.T) {
	at := fuzzStart.UnixMilli()
	_, b, _, err := readBack(t, nil, nil, nil, "1 "+strconv.FormatInt(at+3_600_000, 10)+" 60000 1 5 alicefuture", 0, 0)
	require.NoError(t, err)
	o, ok := b.Override()
	require.True(t, ok)
	assert.Equal(t, time.Minute, o.Remaining(fuzzStart), "set an hour ahead, for a minute: a minute")

	for _, v := range []string{
		"1 0 86400001 1 0 ",               // a TTL above override.MaxTTL
		"1 0 9223372036854775807 1 0 ",    // one that overflows a Duration
		"1 0 0 1 0 ",                      // none
		"1 999999999999999999 60000 1 0 ", // set past the year 9999
		"1 0 60000 1 0 " + string(make([]byte, maxOverrideValue)), // longer than a sharer writes
	} {
		_, b, _, err := readBack(t, nil, nil, nil, v, 0, 0)
		assert.ErrorIs(t, err, errUnusable, "%.40q", v)
		_, ok := b.Override()
		assert.False(t, ok, "%.40q", v)
	}
}
