package redisbreaker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/srebreaker/srebreaker/breaker"
	"github.com/srebreaker/srebreaker/fleet"
	"github.com/srebreaker/srebreaker/redisbreaker"
)

// v2Source is the script of redisbreaker before histories (layout v2),
// as it was released: a v2 process of a fleet in a rolling upgrade runs
// it against the same hash as the v3 processes.
const v2Source = `
local key, id, value = KEYS[1], ARGV[1], ARGV[2]
local now, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local cap = 1125899906842624
local counts = 10 -- per process: see encode

-- parse returns the time and the counts of a process's value ("2 <ms>"
-- and the counts), or, with sum true, 0 and the counts of the sum (the
-- counts alone); nil if v is not that.
local function parse(v, sum)
  if not v then return nil end
  local want = counts + 2
  if sum then want = counts end
  local n = {}
  for token in string.gmatch(v, '%S+') do
    if #n == want then return nil end
    local x = tonumber(token)
    if x == nil or x ~= x or x ~= math.floor(x) then return nil end
    n[#n + 1] = x
  end
  if #n ~= want then return nil end
  local t, first = 0, 1
  if not sum then
    if n[1] ~= 2 then return nil end
    t, first = n[2], 3
  end
  local c = {}
  for j = first, want do
    if n[j] < 0 or n[j] > cap * 4 then return nil end
    c[#c + 1] = n[j]
  end
  return t, c
end

local function format(c)
  local out = {}
  for j = 1, counts do out[j] = string.format('%.0f', c[j]) end
  return table.concat(out, ' ')
end

local _, own = parse(value, false)
if not own then return redis.error_reply('redisbreaker: bad counts from this process') end
local got = redis.call('HMGET', key, id, '=sum', '=swept')
local _, sum = parse(got[2], true)
local swept = tonumber(got[3])
local bad, sweep = 0, 0
redis.call('HSET', key, id, value)
if sum == nil or swept == nil or now - swept >= window / 4 or now < swept then
  sum, sweep = {}, 1
  for j = 1, counts do sum[j] = 0 end
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local field = all[i]
    if string.sub(field, 1, 1) ~= '=' then
      local t, c = parse(all[i + 1], false)
      if not t then
        bad = bad + 1
      elseif now - t > window or t - now > window then
        redis.call('HDEL', key, field)
      else
        for j = 1, counts do sum[j] = math.min(sum[j] + c[j], cap * 4) end
      end
    end
  end
  redis.call('HSET', key, '=swept', string.format('%.0f', now))
else
  local _, old = parse(got[1], false)
  for j = 1, counts do
    sum[j] = sum[j] + own[j]
    if old then sum[j] = sum[j] - old[j] end
    sum[j] = math.min(math.max(sum[j], 0), cap * 4)
  end
end
redis.call('HSET', key, '=sum', format(sum))
redis.call('PEXPIRE', key, ARGV[5])
local out = {}
for j = 1, counts do out[j] = math.min(math.max(sum[j] - own[j], 0), cap) end
out[counts + 1], out[counts + 2] = sweep, bad
return out
`

// v2Round runs a round of a v2 process: it publishes counts (the ten of
// layout v2) at now and returns the others' summed, whether it swept, and
// how many values it could not parse.
func v2Round(t *testing.T, rdb *redis.Client, key, id string, now time.Time, counts [10]int64) (sum [10]int64, swept bool, bad int64) {
	t.Helper()
	value := fmt.Sprint(2, " ", now.UnixMilli())
	for _, c := range counts {
		value += fmt.Sprint(" ", c)
	}
	window := breaker.DefaultWindow
	res, err := rdb.Eval(context.Background(), v2Source, []string{key}, id, value, now.UnixMilli(),
		window.Milliseconds(), (2*window + redisbreaker.DefaultPeriod).Milliseconds()).Int64Slice()
	require.NoError(t, err)
	require.Len(t, res, 12)
	copy(sum[:], res)
	return sum, res[10] == 1, res[11]
}

// A fleet in a rolling upgrade: a v2 process and v3 processes share one
// hash, each reading the others.
func TestSharer_Sync_v2AndV3SideBySide(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client()
	clk := newVirtualClock()
	v3 := newProcess(t, srv, clk, "v3", redisbreaker.WithV3(true))
	quiet := newProcess(t, srv, clk, "quiet", redisbreaker.WithV3(true), redisbreaker.WithV2(false))
	clk.advance(breaker.DefaultWindow)

	// The v3 processes publish; the v2 process reads the one that
	// publishes layout v2 beside its history, and skips the v3 fields.
	fail(v3.b, 4)
	fail(quiet.b, 3)
	clk.advance(span)
	require.NoError(t, v3.sync(t))
	require.NoError(t, quiet.sync(t))
	down := [10]int64{0, 30, 0, 0, 30, 0, 30, 0, 0, 0} // the v2 process's window: 30 failures
	sum, _, bad := v2Round(t, rdb, "test:payments", "v2", clk.Now(), down)
	assert.Zero(t, bad, "v3 fields are not v2 values it cannot parse: it skips them")
	assert.Equal(t, int64(4), sum[1], "the v3 process's failures, in layout v2; not the quiet one's")
	assert.Equal(t, int64(4), sum[4], "its newest run")
	assert.Equal(t, int64(4), sum[6], "read back for: the window's own")
	clk.advance(breaker.DefaultWindow / 4)
	sum, swept, bad := v2Round(t, rdb, "test:payments", "v2", clk.Now(), down)
	assert.True(t, swept)
	assert.Zero(t, bad)
	assert.Equal(t, int64(4), sum[1], "the same, summed afresh")

	// The v3 processes read the v2 process's counts, converted to a
	// history: 30 failures over the window.
	assert.Equal(t, 0.0, dropProbability(t, v3.b))
	require.NoError(t, v3.sync(t))
	assert.Greater(t, dropProbability(t, v3.b), 0.5, "the v3 process sheds on the v2 process's counts")
	require.NoError(t, quiet.sync(t))
	assert.Greater(t, dropProbability(t, quiet.b), 0.5, "so does one that publishes no v2 counts")

	// Had a v3 value gone in a process's own field, the v2 script would
	// count it unparsable on every sweep, and the v2 sharer log it and
	// return ErrBadData: hence the fields of their own.
	require.NoError(t, rdb.HSet(context.Background(), "test:payments", "x", "3 1704067200000 \x01").Err())
	clk.advance(breaker.DefaultWindow / 4)
	_, _, bad = v2Round(t, rdb, "test:payments", "v2", clk.Now(), down)
	assert.Equal(t, int64(1), bad)
}

// v3Round runs, for the breaker b, the round of a process of a release
// before layout v4 (layout v3's script) under id, and returns the others'
// history it read.
func v3Round(t *testing.T, rdb *redis.Client, b breaker.Breaker, id string, now time.Time) fleet.History {
	t.Helper()
	m, ok := fleet.Of(b)
	require.True(t, ok)
	own, err := m.History().MarshalBinary()
	require.NoError(t, err)
	window := m.Window()
	v, err := rdb.Eval(context.Background(), redisbreaker.ExchangeSourceV3, []string{"test:" + b.Name()},
		id, own, "", now.UnixMilli(), window.Milliseconds(), (2*window + redisbreaker.DefaultPeriod).Milliseconds()).Slice()
	require.NoError(t, err)
	var others fleet.History
	require.NoError(t, others.UnmarshalBinary([]byte(v[0].(string))))
	return others
}

func failures(h fleet.History) int64 {
	var n int64
	for _, b := range h.Buckets {
		n += b.Failures
	}
	return n
}

// A rolling upgrade from layout v3 in two steps keeps one fleet: while
// processes of the old release run, the upgraded ones publish both
// layouts (WithV3) and each reads both; once none runs, WithV3 goes.
func TestSharer_Sync_v3AndV4SideBySide(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client()
	clk := newVirtualClock()
	old := breaker.MustNew(breaker.WithName("payments"), breaker.WithClock(clk))
	both := newProcess(t, srv, clk, "both", redisbreaker.WithV3(true))
	v4 := newProcess(t, srv, clk, "v4")
	clk.advance(breaker.DefaultWindow)

	// Step 1: the old release's failures reach the processes that read v3.
	fail(old, 30)
	clk.advance(span)
	v3Round(t, rdb, old, "old", clk.Now())
	require.NoError(t, both.sync(t))
	assert.Greater(t, dropProbability(t, both.b), 0.5, "an upgraded process with WithV3 sheds on the old release's failures")
	require.NoError(t, v4.sync(t))
	assert.Equal(t, 0.0, dropProbability(t, v4.b), "one without it reads the grid alone: hence the two steps")

	// The old release reads the upgraded process's failures, and the
	// process without WithV3 reads them on the grid.
	clk.advance(breaker.DefaultWindow + span) // the old failures leave the window
	require.NoError(t, both.sync(t))
	require.Equal(t, 0.0, dropProbability(t, both.b))
	fail(both.b, 30)
	clk.advance(span)
	require.NoError(t, both.sync(t))
	m, _ := fleet.Of(both.b)
	want := failures(m.History())
	require.Positive(t, want)
	assert.Equal(t, want, failures(v3Round(t, rdb, old, "old", clk.Now())), "the old release counts the upgraded process's")
	require.NoError(t, v4.sync(t))
	assert.Greater(t, dropProbability(t, v4.b), 0.5, "the grid holds the process with WithV3 too")

	// Step 2: the old release is gone; the process with WithV3 still reads
	// the grid, so the processes without it count.
	clk.advance(breaker.DefaultWindow + span)
	require.NoError(t, both.sync(t))
	require.NoError(t, v4.sync(t))
	require.Equal(t, 0.0, dropProbability(t, both.b))
	fail(v4.b, 30)
	clk.advance(span)
	require.NoError(t, v4.sync(t))
	require.NoError(t, both.sync(t))
	assert.Greater(t, dropProbability(t, both.b), 0.5, "the process with WithV3 reads the grid as well as the hash")
}
