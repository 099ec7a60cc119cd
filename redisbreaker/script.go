package redisbreaker

import "github.com/redis/go-redis/v9"

// exchangeSource is the script of a round, run once per breaker, on the
// breaker's key alone (so it runs on any node of a cluster). The key is a
// hash: one field per process, its ID, holding its counts as encode writes
// them; "=sum", the ten counts of those fields added up; "=swept", when
// (Unix ms) stale fields were last deleted.
//
//	KEYS[1]  the breaker's hash
//	ARGV[1]  this process's ID        ARGV[2]  its counts (see encode)
//	ARGV[3]  now, Unix ms             ARGV[4]  the breaker's window, ms
//	ARGV[5]  the key's TTL, ms
//
// It replaces this process's counts, keeping the sum up to date, so that a
// round costs Redis the same whatever the number of processes. Once a
// quarter of a window at most (or when the sum is missing or off), it
// sweeps instead: it deletes the fields published more than a window ago
// (or further ahead, for clocks apart), whose processes stopped or lost
// Redis, and adds up the rest afresh. Values it cannot parse are left
// alone, out of the sum, and counted. It renews the key's TTL and returns
// the sum less this process's counts, then 1 if it swept (0 if not), and
// how many values the sweep could not parse. Each count is capped at 2^50; Lua
// numbers are doubles, exact for integers up to 2^53.
const exchangeSource = `
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

// exchangeScript holds the SHA1 of exchangeSource, for EVALSHA.
var exchangeScript = redis.NewScript(exchangeSource)
