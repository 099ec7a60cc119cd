package redisbreaker

import "github.com/redis/go-redis/v9"

// exchangeSource is the script of a round, run once per breaker, on the
// breaker's key alone (so it runs on any node of a cluster). The key is a
// hash; its fields:
//
//	"=3 <id>"  a process's history, layout v3: when it was published, in
//	           Unix ms, in decimal, a space, then the history in the binary
//	           form of package fleet (fleet.History.MarshalBinary)
//	"=hsum"    the fresh histories added up bucket by bucket, in the same
//	           binary form; "=hswept" when (Unix ms) they were last added
//	           up afresh
//	"<id>"     a process's counts in layout v2, as redisbreaker before
//	           histories published them (see encodeV2); a v3 process writes
//	           its own too while WithV2 is on, for v2 readers
//	"=sum"     the v2 counts added up, for v2 readers ("=swept": when)
//
// v2 readers (redisbreaker before histories) skip every field that starts
// with "=": they never see a v3 field, and read and sum the v2 ones as
// before, the v3 processes' among them.
//
//	KEYS[1]  the breaker's hash
//	ARGV[1]  this process's ID         ARGV[2]  its history (binary)
//	ARGV[3]  its v2 value, or ""       ARGV[4]  now, Unix ms
//	ARGV[5]  the breaker's window, ms  ARGV[6]  the key's TTL, ms
//
// It replaces this process's history, keeping "=hsum" up to date bucket by
// bucket (the sum less the old history, plus the new), so that a round
// costs Redis the same whatever the number of processes: a few fields and
// a window of buckets. Once a quarter of a window at most (or when the
// sum is missing, unreadable or on another grid than this process's), it
// sweeps instead: it deletes the fields published more than a window ago
// (or further ahead, for clocks apart), whose processes stopped or lost
// Redis, and adds up the rest afresh; v2 values of processes without a
// history are added too, converted as v2History says. Values it cannot
// read, or whose buckets are on another grid (another window), are left
// alone, out of the sum, and counted. Its v2 value, when given, goes in
// as the v2 script would put it, keeping "=sum" exact for v2 readers.
//
// It renews the key's TTL and returns the sum less this process's
// history, in the binary form; 1 if it swept, 0 if not; how many values
// the sweep could not use; and the field of the first of them ("" for
// none). Lua numbers are doubles: exact for bucket numbers and counts,
// which stay below 2^53.
const exchangeSource = `
local key, id, v3, v2 = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local now, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local cap = 1125899906842624
local counts = 10 -- per v2 process: see encodeV2

-- uv reads an unsigned varint at pos: the value and the next position,
-- or nil.
local function uv(s, pos)
  local x, mult = 0, 1
  while true do
    local b = string.byte(s, pos)
    if not b or mult > 2^49 then return nil end
    pos = pos + 1
    x = x + (b % 128) * mult
    if b < 128 then return x, pos end
    mult = mult * 128
  end
end

-- sv reads a signed, zig-zag varint.
local function sv(s, pos)
  local u, p = uv(s, pos)
  if not u then return nil end
  if u % 2 == 0 then return u / 2, p end
  return -(u + 1) / 2, p
end

-- A history here: span, size, newest (the newest bucket, never less than
-- any added), b (bucket number to {s, f, d}) and k (block number to
-- {s, f, d}).

-- decode reads a history in fleet's binary form, or returns nil.
local function decode(s)
  if not s or string.byte(s, 1) ~= 1 then return nil end
  local h = {b = {}, k = {}, newest = nil}
  local pos, n, newest, newestBlock
  h.span, pos = uv(s, 2)
  if not h.span then return nil end
  if h.span == 0 then
    if pos ~= #s + 1 then return nil end
    return h
  end
  h.size, pos = uv(s, pos)
  if not h.size or h.size < 1 or h.size > 65536 then return nil end
  newest, pos = sv(s, pos)
  if not newest then return nil end
  h.newest = newest
  for part = 1, 2 do
    local into, limit, last = h.b, 2 * h.size, newest
    if part == 2 then
      newestBlock, pos = sv(s, pos)
      if not newestBlock then return nil end
      into, limit, last = h.k, 2048, newestBlock
    end
    n, pos = uv(s, pos)
    if not n or n > limit then return nil end
    for i = 1, n do
      local c = {}
      for j = 1, 3 do
        c[j], pos = uv(s, pos)
        if not c[j] or c[j] > cap then return nil end
      end
      if c[1] + c[2] + c[3] > 0 then into[last - n + i] = c end
    end
  end
  if pos ~= #s + 1 then return nil end
  return h
end

-- fold moves h's buckets older than two windows before its newest to
-- their blocks, as fleet.History.Merge does.
local function fold(h)
  if not h.newest then return end
  local first = h.newest - 2 * h.size + 1
  for g, c in pairs(h.b) do
    if g < first then
      local k = math.floor(g / h.size)
      local o = h.k[k] or {0, 0, 0}
      h.k[k] = {o[1] + c[1], o[2] + c[2], o[3] + c[3]}
      h.b[g] = nil
    end
  end
end

-- add adds o to h, times sign (1 or -1), bucket by bucket; a bucket that
-- h keeps in a block goes to the block.
local function add(h, o, sign)
  if o.newest and (not h.newest or o.newest > h.newest) then h.newest = o.newest end
  local first = (h.newest or 0) - 2 * h.size + 1
  for part = 1, 2 do
    local from = o.b
    if part == 2 then from = o.k end
    for n, c in pairs(from) do
      local into, at = h.b, n
      if part == 2 then
        into = h.k
      elseif n < first then
        into, at = h.k, math.floor(n / h.size)
      end
      local x = into[at] or {0, 0, 0}
      local y = {}
      for j = 1, 3 do y[j] = math.min(math.max(x[j] + sign * c[j], 0), cap) end
      if y[1] + y[2] + y[3] > 0 then into[at] = y else into[at] = nil end
    end
  end
  fold(h)
end

local function put(out, x)
  repeat
    local b = x % 128
    x = (x - b) / 128
    if x > 0 then b = b + 128 end
    out[#out + 1] = string.char(b)
  until x == 0
end

local function putSigned(out, x)
  if x >= 0 then put(out, 2 * x) else put(out, -2 * x - 1) end
end

-- encode writes h in fleet's binary form.
local function encode(h)
  local out = {string.char(1)}
  put(out, h.span)
  put(out, h.size)
  local newest, first = h.newest or 0, nil
  for g in pairs(h.b) do if not first or g < first then first = g end end
  putSigned(out, newest)
  if not first then put(out, 0) else
    put(out, newest - first + 1)
    for g = first, newest do
      local c = h.b[g] or {0, 0, 0}
      put(out, c[1]); put(out, c[2]); put(out, c[3])
    end
  end
  local hi, lo = nil, nil
  for k in pairs(h.k) do
    if not hi or k > hi then hi = k end
    if not lo or k < lo then lo = k end
  end
  putSigned(out, hi or 0)
  if not hi then put(out, 0) else
    lo = math.max(lo, hi - 2047)
    put(out, hi - lo + 1)
    for k = lo, hi do
      local c = h.k[k] or {0, 0, 0}
      put(out, c[1]); put(out, c[2]); put(out, c[3])
    end
  end
  return table.concat(out)
end

-- parse2 returns the time and the counts of a v2 value ("2 <ms>" and the
-- counts), or, with sum true, 0 and the counts of the sum (the counts
-- alone); nil if v is not that.
local function parse2(v, sum)
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

-- fromV2 is v2History: counts published at t as a history on h's grid.
local function fromV2(t, c, h)
  local o = {b = {}, k = {}}
  o.newest = math.floor(t * 1000000 / h.span) - 1
  local n = h.size - 1
  if n > 0 then
    for i = 0, n - 1 do
      local x = {}
      for j = 1, 3 do x[j] = math.floor(c[j] * (i + 1) / n) - math.floor(c[j] * i / n) end
      if x[1] + x[2] + x[3] > 0 then o.b[o.newest - n + 1 + i] = x end
    end
  end
  local older = {math.max(c[6] - c[1], 0), math.max(c[7] - c[2], 0), math.max(c[8] - c[3], 0)}
  if older[1] + older[2] + older[3] > 0 then o.k[math.floor((o.newest - n) / h.size)] = older end
  return o
end

local function stale(t)
  return now - t > window or t - now > window
end

local function format2(c)
  local out = {}
  for j = 1, counts do out[j] = string.format('%.0f', c[j]) end
  return table.concat(out, ' ')
end

local own = decode(v3)
if not own or own.span == 0 then return redis.error_reply('redisbreaker: bad history from this process') end
local field = '=3 ' .. id
local got = redis.call('HMGET', key, field, '=hsum', '=hswept', id, '=sum')
redis.call('HSET', key, field, string.format('%.0f', now) .. ' ' .. v3)

-- This process's v2 value, as the v2 script puts it.
if v2 ~= '' then
  local _, mine = parse2(v2, false)
  if not mine then return redis.error_reply('redisbreaker: bad v2 counts from this process') end
  redis.call('HSET', key, id, v2)
  local _, sum2 = parse2(got[5], true)
  if sum2 then
    local _, old2 = parse2(got[4], false)
    for j = 1, counts do
      sum2[j] = sum2[j] + mine[j]
      if old2 then sum2[j] = sum2[j] - old2[j] end
      sum2[j] = math.min(math.max(sum2[j], 0), cap * 4)
    end
    redis.call('HSET', key, '=sum', format2(sum2))
  end
end

local sum = decode(got[2])
local swept = tonumber(got[3])
local bad, sweep, firstBad = 0, 0, ''
if sum == nil or sum.span ~= own.span or sum.size ~= own.size or swept == nil or now - swept >= window / 4 or now < swept then
  sum, sweep = {span = own.span, size = own.size, b = {}, k = {}}, 1
  local sum2, any2, has3, v2s = {}, false, {}, {}
  for j = 1, counts do sum2[j] = 0 end
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local f, value = all[i], all[i + 1]
    local ok = true
    if string.sub(f, 1, 3) == '=3 ' then
      local space = string.find(value, ' ', 1, true)
      local t = space and tonumber(string.sub(value, 1, space - 1))
      local h = t and decode(string.sub(value, space + 1))
      if not h or (h.span ~= 0 and (h.span ~= own.span or h.size ~= own.size)) then
        ok = false
      elseif stale(t) then
        redis.call('HDEL', key, f)
      else
        has3[string.sub(f, 4)] = true
        if h.span ~= 0 then add(sum, h, 1) end
      end
    elseif string.sub(f, 1, 1) ~= '=' then
      local t, c = parse2(value, false)
      if not t then
        ok = false
      elseif stale(t) then
        redis.call('HDEL', key, f)
      else
        any2 = true
        for j = 1, counts do sum2[j] = math.min(sum2[j] + c[j], cap * 4) end
        v2s[#v2s + 1] = {f, t, c}
      end
    end
    if not ok then
      bad = bad + 1
      if firstBad == '' then firstBad = f end
    end
  end
  for _, v in ipairs(v2s) do
    if not has3[v[1]] then add(sum, fromV2(v[2], v[3], sum), 1) end
  end
  if any2 then
    redis.call('HSET', key, '=sum', format2(sum2), '=swept', string.format('%.0f', now))
  else
    redis.call('HDEL', key, '=sum', '=swept')
  end
  redis.call('HSET', key, '=hswept', string.format('%.0f', now))
else
  local old = nil
  local value = got[1]
  if value then
    local space = string.find(value, ' ', 1, true)
    old = space and decode(string.sub(value, space + 1))
  end
  if old and old.span == own.span and old.size == own.size then add(sum, old, -1) end
  add(sum, own, 1)
end
redis.call('HSET', key, '=hsum', encode(sum))
redis.call('PEXPIRE', key, ARGV[6])
add(sum, own, -1)
return {encode(sum), sweep, bad, firstBad}
`

// exchangeScript holds the SHA1 of exchangeSource, for EVALSHA.
var exchangeScript = redis.NewScript(exchangeSource)
